package engine_test

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hookrun/hookrun/runner/contract"
	"github.com/hookrun/hookrun/runner/engine"
	"github.com/hookrun/hookrun/runner/engine/enginetest"
	"github.com/hookrun/hookrun/workflows"
)

func TestSecretsAreRedactedEverywhere(t *testing.T) {
	t.Parallel()
	const secret = "s3cr3t-Value-0123456789"
	const multi = "line-one-of-key\nline-two-of-key"
	e := map[string]string{"API_KEY": secret, "MULTI_KEY": multi}
	for k, v := range testEnv {
		e[k] = v
	}
	rep := &enginetest.Reporter{Ref: contract.ReportRef{CommentID: 42}}
	res, sink, dir := runWorkflow(t, `
secrets: [API_KEY, MULTI_KEY, MISSING_KEY]
steps:
  - id: uses
    run: |
      test "$API_KEY" = "$(printf 's3cr3t-Value-%s' 0123456789)" || exit 9
      echo "stdout has $API_KEY"
      echo "stderr has $API_KEY" >&2
      printf '%s\n' "$MULTI_KEY"
      env > envdump
  - id: split
    run: |
      v="$API_KEY"; head="${v%???????????}"
      printf 'split: %s' "$head"; sleep 0.1; printf '%s end\n' "${v#"$head"}"
  - {id: out, run: 'echo "key=$API_KEY"', output: KEY_OUT}
  - {id: fails, run: 'echo "$API_KEY" >&2; exit 4', depends: [out]}
report:
  body: "out: ${KEY_OUT} / secret by name: ${API_KEY}"
`, enginetest.RunOpts{Env: e, Reporter: rep})

	if st := enginetest.Step(res, "uses"); st.Status != succeeded {
		t.Fatalf("step uses = %s (exit %v): the secret did not reach the step\n%s", st.Status, st.ExitCode, sink.All())
	}
	envdump := enginetest.ReadFile(t, dir, "envdump")
	for _, leak := range []string{"GITHUB_TOKEN", "ghp_runner_token", "UNRELATED_SECRET", "runner-only"} {
		if strings.Contains(envdump, leak) {
			t.Errorf("the runner's environment leaked into the step: %q found in its env", leak)
		}
	}
	if !strings.Contains(envdump, "PATH=/usr/local/bin:/usr/bin:/bin") {
		t.Errorf("the base PATH is missing from the step env:\n%s", envdump)
	}
	if !strings.Contains(sink.Text("split", "stdout"), "split: *** end") {
		t.Errorf("a secret split across two writes was not masked: %q", sink.Text("split", "stdout"))
	}
	if !strings.Contains(sink.Text("_run", "system"), "secret MISSING_KEY is not set") {
		t.Errorf("a missing secret is not reported:\n%s", sink.Text("_run", "system"))
	}

	record, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	reports, err := json.Marshal(rep.All())
	if err != nil {
		t.Fatal(err)
	}
	haystacks := map[string]string{
		"log sink": sink.All(),
		"outputs": strings.Join(func() []string {
			var s []string
			for _, o := range res.Outputs {
				s = append(s, o.Value)
			}
			return s
		}(), "\n"),
		"result":  string(record),
		"reports": string(reports),
	}
	for where, text := range haystacks {
		for _, needle := range []string{secret, "line-one-of-key", "line-two-of-key"} {
			if strings.Contains(text, needle) {
				t.Errorf("secret %q appears in the %s:\n%s", needle, where, text)
			}
		}
	}
	if !strings.Contains(sink.Text("uses", "stdout"), "stdout has ***") || !strings.Contains(sink.Text("uses", "stderr"), "stderr has ***") {
		t.Errorf("log lines are not masked as expected:\n%s", sink.All())
	}
	if res.Outputs[0].Value != "key=***" {
		t.Errorf("output = %q, want key=***", res.Outputs[0].Value)
	}
	if res.Body != "out: key=*** / secret by name: ${API_KEY}" {
		t.Errorf("report body = %q", res.Body)
	}
}

func TestUntrustedTitleReachesStepsOnlyAsEnv(t *testing.T) {
	t.Parallel()
	buf := make([]byte, 6)
	if _, err := rand.Read(buf); err != nil {
		t.Fatal(err)
	}
	marker := filepath.Join(os.TempDir(), "pwned-"+hex.EncodeToString(buf))
	ev := samplePR()
	ev.PullRequest.Title = "Fix $(touch " + marker + ") and `touch " + marker + "-bt` ${HOOKRUN_RUN_ID} '; touch " + marker + "-q; '"
	ev.Comment = &workflows.Comment{Body: "/review $(touch " + marker + "-c)"}
	t.Cleanup(func() {
		for _, sfx := range []string{"", "-bt", "-q", "-c"} {
			os.Remove(marker + sfx)
		}
	})
	res, sink, _ := runWorkflow(t, `
env:
  - WF_TITLE: "${HOOKRUN_PR_TITLE}"
steps:
  - {id: title, run: 'printf "%s\n" "$HOOKRUN_PR_TITLE"'}
  - {id: unquoted, run: 'echo title: $HOOKRUN_PR_TITLE; echo $HOOKRUN_COMMENT_BODY'}
  - id: via-env
    env: [{T: "title is ${HOOKRUN_PR_TITLE}"}]
    run: 'printf "%s\n" "$T" "$WF_TITLE"'
report:
  body: "Reviewed ${HOOKRUN_PR_TITLE}"
`, enginetest.RunOpts{Event: ev})
	if res.Status != succeeded {
		t.Fatalf("status %s: %s\n%s", res.Status, res.Error, sink.All())
	}
	for _, sfx := range []string{"", "-bt", "-q", "-c"} {
		if _, err := os.Stat(marker + sfx); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s exists: untrusted text was executed", marker+sfx)
		}
	}
	if got := sink.Text("title", "stdout"); got != ev.PullRequest.Title+"\n" {
		t.Errorf("step saw title %q, want it verbatim %q", got, ev.PullRequest.Title)
	}
	if got := sink.Text("via-env", "stdout"); got != "title is "+ev.PullRequest.Title+"\n"+ev.PullRequest.Title+"\n" {
		t.Errorf("step env got %q", got)
	}
	if res.Body != "Reviewed "+ev.PullRequest.Title {
		t.Errorf("body = %q", res.Body)
	}
}

func TestReportingPhasesThrottleAndRef(t *testing.T) {
	t.Parallel()
	rep := &enginetest.Reporter{Ref: contract.ReportRef{CommentID: 42}}
	res, sink, _ := runWorkflow(t, `
type: chain
steps:
  - {id: s1, run: "sleep 0.1"}
  - {id: s2, run: "sleep 0.1"}
  - {id: s3, run: "sleep 0.1"}
  - {id: s4, run: "sleep 0.1"}
  - {id: s5, run: "sleep 0.1"}
  - {id: s6, run: "sleep 0.1"}
  - {id: s7, run: "sleep 0.1"}
  - {id: s8, run: "sleep 0.1"}
report:
  body: "done ${HOOKRUN_RUN_STATUS}"
`, enginetest.RunOpts{Reporter: rep, Cfg: func(c *engine.Config) { c.ProgressInterval = 300 * time.Millisecond }})
	if res.Status != succeeded {
		t.Fatalf("status %s: %s\n%s", res.Status, res.Error, sink.All())
	}
	reports := rep.All()
	if len(reports) < 3 {
		t.Fatalf("got %d reports, want start, progress and final", len(reports))
	}
	if reports[0].Phase != contract.PhaseStart || reports[0].Ref.CommentID != 0 {
		t.Errorf("first report = %s ref %+v, want start without ref", reports[0].Phase, reports[0].Ref)
	}
	last := reports[len(reports)-1]
	if last.Phase != contract.PhaseFinal || last.Status != succeeded || last.Body != "done succeeded" {
		t.Errorf("last report = %s %s %q", last.Phase, last.Status, last.Body)
	}
	for _, s := range last.Steps {
		if s.Status != succeeded {
			t.Errorf("final report has step %s %s", s.ID, s.Status)
		}
	}
	progress := 0
	times := rep.Times()
	for i, r := range reports[1:] {
		if r.Ref.CommentID != 42 {
			t.Errorf("report %d carries ref %+v, want the comment id from the start report", i+1, r.Ref)
		}
		if r.Phase == contract.PhaseProgress {
			progress++
			// Throttled: never closer than the interval to the report before.
			if gap := times[i+1].Sub(times[i]); gap < 290*time.Millisecond {
				t.Errorf("progress report %d sent %s after the previous report, want >= 300ms", i+1, gap)
			}
		}
	}
	// 8 steps of 0.1 s make 16 changes; coalesced, they produce at most one
	// progress report per interval.
	if limit := int(res.Duration()/(300*time.Millisecond)) + 1; progress < 1 || progress > limit {
		t.Errorf("%d progress reports for 16 changes in %s with a 300ms throttle (want 1..%d)", progress, res.Duration(), limit)
	}
	if res.Ref.CommentID != 42 {
		t.Errorf("result ref = %+v", res.Ref)
	}
}

func TestReportingErrorsNeverFailTheRun(t *testing.T) {
	t.Parallel()
	rep := &enginetest.Reporter{Fail: errors.New("github said 502")}
	res, _, _ := runWorkflow(t, `
steps:
  - {id: a, run: "true"}
`, enginetest.RunOpts{Reporter: rep})
	if res.Status != succeeded {
		t.Errorf("status = %s, a reporting failure must not fail the run", res.Status)
	}
	if !strings.Contains(res.ReportError, "reporting final: github said 502") {
		t.Errorf("report error = %q", res.ReportError)
	}
}
