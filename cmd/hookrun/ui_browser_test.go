package main

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// uiWorkflow's second step waits for a gate file the test creates once it
// has seen the run live in the browser, so that the page is known to show
// a running run turn into a finished one.
const uiWorkflow = `name: ui-demo
on:
  - event: pull_request
    actions: [opened]
steps:
  - id: checkout
    run: 'echo "reviewing: $HOOKRUN_PR_TITLE"'
  - id: review
    depends: [checkout]
    run: |
      i=0; while [ ! -e GATE ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i+1)); done
      echo "review finished after $i ticks"
  - id: report
    depends: [review]
    run: echo "ui-demo done"
report:
  comment: sticky
  body: "ui-demo: ${HOOKRUN_RUN_STATUS}"
`

// slowWorkflow is started through the API and cancelled from the browser.
const slowWorkflow = `name: nightly-sweep
steps:
  - id: sweep
    run: echo "sweeping"; sleep 60
  - id: after
    depends: [sweep]
    run: echo never
`

// graphWorkflow is started through the API for the run graph: three
// steps in parallel after checkout, one of them failing, so that package
// is skipped and the failure handler runs.
const graphWorkflow = `name: build-matrix
steps:
  - id: checkout
    run: echo checkout
  - id: lint
    depends: [checkout]
    run: echo lint
  - id: unit-tests
    depends: [checkout]
    run: 'echo "2 tests failed"; exit 1'
  - id: build
    depends: [checkout]
    run: echo build
  - id: package
    depends: [lint, unit-tests, build]
    run: echo package
handler_on:
  success:
    id: announce
    run: echo released
  failure:
    id: notify-failure
    run: 'echo "failed: $HOOKRUN_RUN_STATUS"'
  exit:
    id: cleanup
    run: echo cleanup
`

// chromiumPath is Debian's chromium (make ui-tools installs it), or
// another Chrome on PATH.
func chromiumPath() string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// TestUIBrowser drives the web UI of a real `hookrun serve` (embedded NATS,
// fake GitHub API) in headless Chromium: / sends it to the login form, the
// API token logs it in, the runs list shows the run of a signed
// pull_request delivery, and its page shows the run live (status running,
// the cancel button, the first step's line streamed) and then finished
// (succeeded, every step succeeded with a duration, the last log line,
// links to the PR, the sticky comment and the commit) without a reload. A
// second run, started through the API, is cancelled with the page's Cancel
// button and ends cancelled. The run graph follows the first run live, and
// a third run's wider graph is drawn at its natural size on a phone and a
// desktop. The deliveries page lists the pull_request delivery (ran) and
// an issues delivery nothing takes (skipped), its outcome filter narrows
// it, the delivery's page shows every workflow considered and its run, and
// its Replay button replays it (checkDeliveries). With HOOKRUN_UI_SCREENSHOTS=DIR it also writes
// the screenshots of docs/ui.md there (make screenshots).
func TestUIBrowser(t *testing.T) {
	bin := chromiumPath()
	if bin == "" {
		t.Skip("!!! SKIPPED: no chromium on PATH; `make ui-tools` installs Debian's chromium !!!")
	}
	const secret, ghToken, apiToken = "ui-secret", "gh-token-ui", "api-token-ui"
	gh, ghSrv := newFakeGitHub(t, ghToken)
	gh.context = "hookrun/ui-demo"
	dir := t.TempDir()
	gateDir, err := os.MkdirTemp("", "hookrun-ui-gate-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(gateDir) })
	if err := os.Chmod(gateDir, 0o755); err != nil { // the step user reads it
		t.Fatal(err)
	}
	gate := filepath.Join(gateDir, "open")
	writeFile(t, filepath.Join(dir, "workflows", "ui-demo.yaml"), strings.ReplaceAll(uiWorkflow, "GATE", gate))
	writeFile(t, filepath.Join(dir, "workflows", "nightly-sweep.yaml"), slowWorkflow)
	writeFile(t, filepath.Join(dir, "workflows", "build-matrix.yaml"), graphWorkflow)
	cfg, addr := githubServeConfig(t, dir, ghSrv.URL, apiToken, "")
	p := startHookrun(t, "serve", serveEnv(secret, ghToken), "serve", "--config", cfg)
	base := "http://" + addr
	waitReady(t, p, base, 60*time.Second)

	code, ans := postGitHub(t, base, secret, "pull_request", "ui-delivery-1", fixture(t, "github/pull_request/opened.payload.json"))
	if code != http.StatusAccepted || len(ans.Runs) != 1 {
		t.Fatalf("delivery: %d %+v", code, ans)
	}
	runID := ans.Runs[0].ID

	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(bin), chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.WindowSize(1280, 900))
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancelAlloc()
	browser, cancelBrowser := chromedp.NewContext(allocCtx)
	defer cancelBrowser()
	if err := chromedp.Do(browser); err != nil { // starts the browser, without a deadline (see chromedp.Run)
		t.Fatalf("starting %s: %v", bin, err)
	}
	ctx, cancel := context.WithTimeout(browser, 60*time.Second)
	defer cancel()
	do := func(what string, actions ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		if err := chromedp.Do(ctx, actions...); err != nil {
			html, _ := chromedp.Run(browser, chromedp.OuterHTML("html"))
			t.Fatalf("%s: %v\npage:\n%s", what, err, tail(html, 4000))
		}
	}
	get := func(a chromedp.Action[string]) string {
		t.Helper()
		v, err := chromedp.Run(ctx, a)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}

	// Login: / goes to the form; a wrong token is refused; the right one
	// lands on the runs list.
	do("opening /", chromedp.Navigate(base+"/"), chromedp.WaitVisible("#token"))
	if loc := get(chromedp.Location()); loc != base+"/login?next=%2F" {
		t.Fatalf("/ without a session went to %s", loc)
	}
	do("wrong token", chromedp.SendKeys("#token", "not-the-token"), chromedp.Submit("#login-form"), chromedp.WaitVisible("#login-error"))
	do("logging in", chromedp.SendKeys("#token", apiToken), chromedp.Submit("#login-form"), chromedp.WaitVisible("#runs"))
	if loc := get(chromedp.Location()); strings.Contains(loc, apiToken) || loc != base+"/" {
		t.Fatalf("after login at %s", loc)
	}
	if list := get(chromedp.Text("#runs")); !strings.Contains(list, runID) || !strings.Contains(list, "Update the README with new information.") {
		t.Fatalf("runs list lacks the run %s:\n%s", runID, list)
	}

	// The run page while the run waits at its gate.
	do("opening the run", chromedp.Click(`a[href="/runs/`+runID+`"]`), chromedp.WaitVisible("#summary"),
		chromedp.WaitVisible(`li[data-step="review"][data-status="running"]`))
	if live := get(chromedp.Text("#live-state")); live != "live" {
		t.Errorf("live marker %q, want live", live)
	}
	do("the first step's line streamed", chromedp.WaitVisible("#cancel"),
		chromedp.Func(func(ctx context.Context, _ *chromedp.Target) error {
			_, err := chromedp.Run(ctx, chromedp.Poll[bool](`document.getElementById("log").textContent.includes("reviewing: Update the README with new information.")`,
				chromedp.WithPollingTimeout(20*time.Second)))
			return err
		}))
	// The graph: the workflow's shape, each node in its step's state.
	do("the graph while live", chromedp.WaitVisible(`#graph g.node.live[data-step="review"][data-status="running"]`),
		chromedp.WaitVisible(`#graph g.node.ok[data-step="checkout"][data-status="succeeded"]`),
		chromedp.WaitVisible(`#graph g.node[data-step="report"][data-status="pending"]`),
		chromedp.WaitVisible(`#graph path.edge[data-from="checkout"][data-to="review"]`),
		chromedp.WaitVisible(`#graph path.edge[data-from="review"][data-to="report"]`))
	shots := newShooter(t, ctx)
	shots.take("ui-run-live-desktop.png")

	// Let it finish: the page turns to succeeded by itself.
	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	do("the run finishing on the page", chromedp.WaitVisible(`body[data-run-ended="succeeded"]`),
		// the graph turned with it, without a reload
		chromedp.WaitVisible(`#graph g.node.ok[data-step="review"][data-status="succeeded"]`),
		chromedp.WaitVisible(`#graph g.node.ok[data-step="report"][data-status="succeeded"]`))
	if dur := get(chromedp.TextContent(`#graph g.node[data-step="review"] text.dur`)); !strings.HasSuffix(dur, "s") {
		t.Errorf("review node duration %q", dur)
	}
	if st := get(chromedp.Text("#run-status")); st != "succeeded" {
		t.Errorf("status %q, want succeeded", st)
	}
	steps, err := chromedp.Run(ctx, chromedp.AttributesAll("li.step"))
	if err != nil {
		t.Fatal(err)
	}
	if len(steps) != 3 {
		t.Errorf("%d steps shown, want 3", len(steps))
	}
	for _, s := range steps {
		if s["data-status"] != "succeeded" {
			t.Errorf("step %s is %s on the page, want succeeded", s["data-step"], s["data-status"])
		}
	}
	if meta := get(chromedp.Text(`li[data-step="review"] .step-meta`)); !strings.HasSuffix(meta, "s · exit 0") {
		t.Errorf("review step meta %q: want a duration and exit 0", meta)
	}
	logText := get(chromedp.TextContent("#log"))
	for _, want := range []string{"[checkout] reviewing: Update the README", "[review] review finished after", "[report] ui-demo done"} {
		if !strings.Contains(logText, want) {
			t.Errorf("log lacks %q:\n%s", want, logText)
		}
	}
	if strings.Count(logText, "ui-demo done") != 1 {
		t.Errorf("log lines repeated:\n%s", logText)
	}
	for sel, want := range map[string]string{
		"#link-change":  "https://github.com/Codertocat/Hello-World/pull/2",
		"#link-commit":  "https://github.com/Codertocat/Hello-World/commit/ec26c3e57ca3a959ca5aad62de7213c562f8c821",
		"#link-comment": "https://github.com/Codertocat/Hello-World/pull/2#issuecomment-1001",
	} {
		// The sticky comment's id reaches the record with the final report.
		var got chromedp.AttributeResult
		for deadline := time.Now().Add(10 * time.Second); ; {
			got, _ = chromedp.Run(ctx, chromedp.AttributeValue(sel, "href"))
			if got.Value == want || time.Now().After(deadline) {
				break
			}
			do("reloading", chromedp.Reload(), chromedp.WaitVisible("#summary"))
		}
		if got.Value != want {
			t.Errorf("%s href %q, want %q", sel, got.Value, want)
		}
	}
	if n, err := chromedp.Run(ctx, chromedp.Nodes("#cancel", chromedp.AtLeast(0))); err != nil || len(n) != 0 {
		t.Errorf("a finished run still offers cancel (%d, %v)", len(n), err)
	}
	shots.take("ui-run-desktop.png")

	// Cancel from the browser: a run started through the API, running its
	// 60 s step.
	var started struct{ Run string }
	if code := apiPost(t, base, apiToken, "/api/v1/workflows/nightly-sweep/runs", `{"repo": "Codertocat/Hello-World"}`, &started); code != http.StatusAccepted {
		t.Fatalf("starting nightly-sweep: %d", code)
	}
	do("opening the slow run", chromedp.Navigate(base+"/runs/"+started.Run),
		chromedp.WaitVisible(`li[data-step="sweep"][data-status="running"]`), chromedp.Click("#cancel"))
	// The page after the post is live (the runner is still stopping the
	// step, and the page turns by itself) or already rendered cancelled.
	do("the cancelled run on the page", chromedp.WaitVisible(`#run-status[data-status="cancelled"]`),
		chromedp.WaitVisible(`li[data-step="sweep"][data-status="cancelled"]`))
	if st := get(chromedp.Text("#run-status")); st != "cancelled" {
		t.Errorf("status after Cancel %q, want cancelled", st)
	}
	var rec struct{ Status string }
	if apiGet(t, base, apiToken, "/api/v1/runs/"+started.Run, &rec); rec.Status != "cancelled" {
		t.Errorf("API says the cancelled run is %q", rec.Status)
	}

	// Re-run from the browser: the finished ui-demo run's button queues a
	// new run linked both ways (Server.Rerun, as POST .../rerun) and opens
	// its page, where it finishes (the gate is open now).
	do("re-running", chromedp.Navigate(base+"/runs/"+runID), chromedp.WaitVisible("#rerun"), chromedp.Click("#rerun"),
		chromedp.WaitVisible(`#rerun-of[href="/runs/`+runID+`"]`), chromedp.WaitVisible(`body[data-run-ended="succeeded"]`))
	rerunID := strings.TrimPrefix(get(chromedp.Location()), base+"/runs/")
	var rerun struct {
		RerunOf   string `json:"rerun_of"`
		CommentID int64  `json:"comment_id"`
	}
	var orig struct {
		Reruns    []string `json:"reruns"`
		CommentID int64    `json:"comment_id"`
	}
	apiGet(t, base, apiToken, "/api/v1/runs/"+rerunID, &rerun)
	apiGet(t, base, apiToken, "/api/v1/runs/"+runID, &orig)
	if rerun.RerunOf != runID || len(orig.Reruns) != 1 || orig.Reruns[0] != rerunID || rerun.CommentID == 0 || rerun.CommentID != orig.CommentID {
		t.Errorf("re-run %s from the UI: rerun_of %q comment %d; original reruns %v comment %d", rerunID, rerun.RerunOf, rerun.CommentID, orig.Reruns, orig.CommentID)
	}

	checkDeliveries(t, base, secret, apiToken, runID, do, get, shots)

	// Filters: the list narrowed to ui-demo through the form.
	do("filtering", chromedp.Navigate(base+"/"), chromedp.WaitVisible("#filters"),
		chromedp.SendKeys(`input[name="workflow"]`, "ui-demo"), chromedp.Submit("#filters"),
		// the filtered page, not the one before it
		chromedp.WaitNotPresent(`a[href="/runs/`+started.Run+`"]`), chromedp.WaitVisible(`a[href="/runs/`+runID+`"]`))
	if list := get(chromedp.Text("#runs")); !strings.Contains(list, runID) || strings.Contains(list, started.Run) {
		t.Errorf("?workflow=ui-demo shows:\n%s", list)
	}
	do("all runs", chromedp.Navigate(base+"/"), chromedp.WaitVisible("#runs"))
	shots.take("ui-runs-desktop.png")
	do("phone", chromedp.EmulateViewport(390, 844, chromedp.EmulateScale(2), chromedp.EmulateMobile), chromedp.Reload(), chromedp.WaitVisible("#runs"))
	// Readable on a phone: nothing wider than the screen.
	if wide, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.documentElement.scrollWidth > window.innerWidth`)); err != nil || wide {
		t.Errorf("the runs list scrolls sideways on a 390 px screen (%v)", err)
	}
	shots.take("ui-runs-phone.png")
	do("phone run page", chromedp.Navigate(base+"/runs/"+runID), chromedp.WaitVisible("#log"))
	if wide, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.documentElement.scrollWidth > window.innerWidth`)); err != nil || wide {
		t.Errorf("the run page scrolls sideways on a 390 px screen (%v)", err)
	}
	shots.take("ui-run-phone.png")

	// The graph of a wider run on a phone: at its natural size (13 px
	// ids), scrolling sideways inside its frame, not the page.
	var matrix struct{ Run string }
	if code := apiPost(t, base, apiToken, "/api/v1/workflows/build-matrix/runs", `{"repo": "Codertocat/Hello-World"}`, &matrix); code != http.StatusAccepted {
		t.Fatalf("starting build-matrix: %d", code)
	}
	do("the build-matrix graph", chromedp.Navigate(base+"/runs/"+matrix.Run), chromedp.WaitVisible(`body[data-run-ended="failed"], #run-status[data-status="failed"]`),
		chromedp.WaitVisible(`#graph g.node.bad[data-step="unit-tests"]`), chromedp.WaitVisible(`#graph g.node.off[data-step="package"][data-status="skipped"]`),
		chromedp.WaitVisible(`#graph g.node[data-handler="failure"][data-step="notify-failure"][data-status="succeeded"]`),
		chromedp.WaitVisible(`#graph g.node[data-handler="success"][data-step="announce"][data-status="skipped"]`))
	checkGraphFit(t, ctx, true)
	shots.take("ui-run-graph-phone.png")
	do("desktop", chromedp.EmulateViewport(1280, 900), chromedp.Reload(), chromedp.WaitVisible(`#graph g.node.bad[data-step="unit-tests"]`))
	checkGraphFit(t, ctx, false)
	shots.take("ui-run-graph-desktop.png")

	gh.mu.Lock()
	defer gh.mu.Unlock()
	if len(gh.bad) > 0 {
		t.Errorf("requests the real API would refuse: %v", gh.bad)
	}
}

// checkGraphFit checks the run graph is drawn at its natural size (13 px
// step ids), and the page does not scroll sideways; on a phone, a graph
// wider than the screen scrolls inside its frame.
func checkGraphFit(t *testing.T, ctx context.Context, phone bool) {
	t.Helper()
	fit, err := chromedp.Run(ctx, chromedp.Evaluate[struct {
		Scale, IDFont          float64
		PageWide, FrameScrolls bool
	}](`(() => {
		const svg = document.querySelector("#graph svg"), fig = document.getElementById("graph");
		const scale = svg.getBoundingClientRect().width / svg.viewBox.baseVal.width;
		return {Scale: scale, IDFont: parseFloat(getComputedStyle(svg.querySelector("text.sid")).fontSize) * scale,
			PageWide: document.documentElement.scrollWidth > window.innerWidth, FrameScrolls: fig.scrollWidth > fig.clientWidth};
	})()`))
	if err != nil {
		t.Fatal(err)
	}
	if fit.Scale < 0.99 || fit.IDFont < 13 || fit.PageWide || fit.FrameScrolls != phone {
		t.Errorf("graph on a %s: %+v: want scale 1, 13 px ids, no page scrolling, the frame scrolling only on the phone",
			map[bool]string{true: "phone", false: "desktop"}[phone], fit)
	}
}

// shooter writes full-page PNGs to $HOOKRUN_UI_SCREENSHOTS, when set.
type shooter struct {
	t   *testing.T
	ctx context.Context
	dir string
}

func newShooter(t *testing.T, ctx context.Context) *shooter {
	return &shooter{t: t, ctx: ctx, dir: os.Getenv("HOOKRUN_UI_SCREENSHOTS")}
}

func (s *shooter) take(name string) {
	s.t.Helper()
	if s.dir == "" {
		return
	}
	png, err := chromedp.Run(s.ctx, chromedp.FullScreenshot(100))
	if err != nil {
		s.t.Fatalf("screenshot %s: %v", name, err)
	}
	if err := os.WriteFile(filepath.Join(s.dir, name), png, 0o644); err != nil {
		s.t.Fatal(err)
	}
	s.t.Logf("wrote %s (%d bytes)", filepath.Join(s.dir, name), len(png))
}

// apiPost posts a JSON body with the bearer token and decodes the answer
// into v.
func apiPost(t *testing.T, url, token, path, body string, v any) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	_ = json.NewDecoder(resp.Body).Decode(v)
	return resp.StatusCode
}

// checkDeliveries is TestUIBrowser's deliveries part: the list and its
// outcome filter, a delivery's page, its Replay button; and the CLI's
// `deliveries list|get` against the same server.
func checkDeliveries(t *testing.T, base, secret, apiToken, runID string, do func(string, ...chromedp.Action[chromedp.Void]), get func(chromedp.Action[string]) string, shots *shooter) {
	t.Helper()
	if code, ans := postGitHub(t, base, secret, "issues", "ui-delivery-skip", fixture(t, "github/issues/opened.payload.json")); code != http.StatusAccepted || len(ans.Runs) != 0 {
		t.Fatalf("issues delivery: %d %+v", code, ans)
	}
	do("opening deliveries", chromedp.Navigate(base+"/deliveries"), chromedp.WaitVisible("#deliveries"),
		chromedp.WaitVisible(`tr[data-delivery="ui-delivery-1"][data-outcome="ran"]`),
		chromedp.WaitVisible(`tr[data-delivery="ui-delivery-skip"][data-outcome="skipped"]`))
	shots.take("ui-deliveries-desktop.png")
	do("filtering deliveries", chromedp.SetValue(`select[name="outcome"]`, "ran"), chromedp.Submit("#filters"),
		chromedp.WaitNotPresent(`tr[data-delivery="ui-delivery-skip"]`), chromedp.WaitVisible(`tr[data-delivery="ui-delivery-1"]`))
	do("opening the delivery", chromedp.Click(`a[href="/deliveries/github/ui-delivery-1"]`), chromedp.WaitVisible("#workflows"),
		chromedp.WaitVisible(`tr[data-workflow="ui-demo"][data-matched="true"][data-ran="true"]`),
		chromedp.WaitVisible(`#delivery-runs a[href="/runs/`+runID+`"]`))
	if why := get(chromedp.Text("#workflows")); !strings.Contains(why, "nightly-sweep") {
		t.Errorf("the delivery's workflows do not list nightly-sweep with its reason:\n%s", why)
	}
	shots.take("ui-delivery-desktop.png")
	do("replaying", chromedp.Click("#replay"), chromedp.WaitVisible("#replayed"),
		chromedp.WaitVisible(`li[data-replay="ui-delivery-1:replay:1"] a.run-id`))

	t.Setenv("HOOKRUN_SERVER", base)
	t.Setenv("HOOKRUN_API_TOKEN", apiToken)
	code, out, errs := runCLIWithin(t, 10*time.Second, "deliveries", "list", "--outcome", "skipped", "--json")
	var page struct {
		Deliveries []struct{ ID string } `json:"deliveries"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &page) != nil || len(page.Deliveries) != 1 || page.Deliveries[0].ID != "ui-delivery-skip" {
		t.Errorf("deliveries list --outcome skipped --json: %d %q %q", code, out, errs)
	}
	if code, out, errs := runCLIWithin(t, 10*time.Second, "deliveries", "get", "ui-delivery-1"); code != 0 || !strings.Contains(out, runID) ||
		!strings.Contains(out, "ui-delivery-1:replay:1") || !strings.Contains(out, "ui-demo") {
		t.Errorf("deliveries get: %d %q %q", code, out, errs)
	}
}
