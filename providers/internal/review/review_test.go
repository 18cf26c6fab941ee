package review

import (
	"strings"
	"testing"

	"github.com/hookrun/hookrun/runner/contract"
	"github.com/hookrun/hookrun/workflows"
)

// patch is main.go's patch as GitHub's pull request files API gives it:
// lines 10-12 context, 13-14 added (a line removed between), 15 context,
// a second hunk adding 40.
const patch = "@@ -10,6 +10,7 @@ func main() {\n" +
	" \tctx := context.Background()\n" +
	" \tcfg := load()\n" +
	" \tif cfg == nil {\n" +
	"-\t\tpanic(\"no config\")\n" +
	"+\t\tlog.Fatal(\"no config\")\n" +
	"+\t\treturn\n" +
	" \t}\n" +
	"@@ -37,2 +39,3 @@ func run() {\n" +
	" \tx := 1\n" +
	"+\ty := x\n" +
	" }\n" +
	"\\ No newline at end of file"

func diff() Diff { return Diff{"main.go": ParsePatch(patch), "other.go": ParsePatch("")} }

func TestParsePatch(t *testing.T) {
	fd := ParsePatch(patch)
	for _, l := range []int{13, 14, 40} {
		if !fd.Added[l] {
			t.Errorf("line %d not added", l)
		}
	}
	for _, l := range []int{10, 11, 12, 15, 39, 41} {
		if !fd.Context[l] || fd.Added[l] {
			t.Errorf("line %d not context", l)
		}
	}
	if len(fd.Added) != 3 || len(fd.Context) != 6 {
		t.Errorf("added %v context %v", fd.Added, fd.Context)
	}
	if fd.Old[15] != 14 || fd.Old[12] != 12 || fd.Old[41] != 38 {
		t.Errorf("old lines %v", fd.Old)
	}
	if fd.Text[13] != "\t\tlog.Fatal(\"no config\")" {
		t.Errorf("text of 13: %q", fd.Text[13])
	}
}

func TestParseUnified(t *testing.T) {
	d := ParseUnified("diff --git a/main.go b/main.go\nindex 1..2 100644\n--- a/main.go\n+++ b/main.go\n" + patch +
		"\ndiff --git a/gone.go b/gone.go\ndeleted file mode 100644\n--- a/gone.go\n+++ /dev/null\n@@ -1 +0,0 @@\n-x\n" +
		"diff --git a/new.go b/new.go\nnew file mode 100644\n--- /dev/null\n+++ b/new.go\n@@ -0,0 +1,2 @@\n+package x\n+\n")
	if d["main.go"] == nil || !d["main.go"].Added[40] || d["gone.go"] != nil || !d["new.go"].Added[2] {
		t.Errorf("diff %+v", d)
	}
}

// TestFilterModes: which findings each filter mode comments on, keeps in
// the body and drops.
func TestFilterModes(t *testing.T) {
	fs := []contract.Finding{
		{Path: "main.go", StartLine: 13, Message: "added"},
		{Path: "main.go", StartLine: 11, Message: "context"},
		{Path: "main.go", StartLine: 25, Message: "outside the hunks"},
		{Path: "other.go", StartLine: 1, Message: "file without patch"},
		{Path: "untouched.go", StartLine: 3, Message: "file not changed"},
		{Message: "no file"},
	}
	for _, tc := range []struct {
		filter                  string
		comments, kept, dropped string
	}{
		{workflows.ReviewFilterAdded, "added", "", "context,outside the hunks,file without patch,file not changed,no file"},
		{workflows.ReviewFilterDiffContext, "added,context", "", "outside the hunks,file without patch,file not changed,no file"},
		{workflows.ReviewFilterFile, "added,context", "outside the hunks,file without patch", "file not changed,no file"},
		{workflows.ReviewFilterNone, "added,context", "outside the hunks,file without patch,file not changed,no file", ""},
	} {
		p := Build(fs, diff(), workflows.ReviewOptions{Filter: tc.filter, MaxComments: 30}, nil)
		var c []string
		for _, x := range p.Comments {
			c = append(c, x.Finding.Message)
		}
		if got := strings.Join(c, ","); got != tc.comments {
			t.Errorf("%s: comments %q, want %q", tc.filter, got, tc.comments)
		}
		if got := messages(p.Kept); got != tc.kept {
			t.Errorf("%s: kept %q, want %q", tc.filter, got, tc.kept)
		}
		if got := messages(p.Dropped); got != tc.dropped {
			t.Errorf("%s: dropped %q, want %q", tc.filter, got, tc.dropped)
		}
	}
}

func messages(fs []contract.Finding) string {
	var out []string
	for _, f := range fs {
		out = append(out, f.Message)
	}
	return strings.Join(out, ",")
}

// TestMaxCommentsAndPrevious: over max_comments goes to Kept; a finding an
// earlier run commented on is not commented again; Tally counts.
func TestMaxCommentsAndPrevious(t *testing.T) {
	fs := []contract.Finding{
		{Path: "main.go", StartLine: 13, Rule: "a", Message: "one"},
		{Path: "main.go", StartLine: 14, Rule: "b", Message: "two"},
		{Path: "main.go", StartLine: 40, Rule: "c", Message: "three"},
	}
	first := Build(fs, diff(), workflows.ReviewOptions{MaxComments: 2}, nil)
	if len(first.Comments) != 2 || messages(first.Kept) != "three" {
		t.Fatalf("comments %d kept %q", len(first.Comments), messages(first.Kept))
	}
	prev := map[string]bool{first.Comments[0].Fingerprint: true, first.Comments[1].Fingerprint: true, "0123456789abcdef0123456789abcdef": true}
	// the same findings moved down a line, code unchanged: same fingerprints
	second := Build(fs[1:], diff(), workflows.ReviewOptions{MaxComments: 2}, prev)
	if len(second.Comments) != 1 || second.Comments[0].Finding.Message != "three" {
		t.Errorf("second run comments %+v", second.Comments)
	}
	still, gone := Tally(second, prev)
	if len(still) != 1 || len(gone) != 2 {
		t.Errorf("still %v gone %v", still, gone)
	}
}

// TestSuggestions: a whole-line suggestion and a column one become each
// forge's syntax over the lines they replace.
func TestSuggestions(t *testing.T) {
	f := contract.Finding{Path: "main.go", StartLine: 13, EndLine: 14, Rule: "r", Message: "m",
		Suggestions: []contract.Suggestion{{StartLine: 13, EndLine: 14, Text: "\t\tlog.Fatal(\"none\")\n"}}}
	p := Build([]contract.Finding{f}, diff(), workflows.ReviewOptions{}, nil)
	c := p.Comments[0]
	if c.StartLine != 13 || c.Line != 14 || !c.Suggested {
		t.Fatalf("comment %+v", c)
	}
	if b := Body(c, Suggestion); !strings.Contains(b, "\n```suggestion\n\t\tlog.Fatal(\"none\")\n```\n") {
		t.Errorf("github body %q", b)
	}
	if b := Body(c, SuggestionRange); !strings.Contains(b, "\n```suggestion:-0+1\n\t\tlog.Fatal(\"none\")\n```\n") {
		t.Errorf("gitlab body %q", b)
	}
	if b := Body(c, FencedDiff); !strings.Contains(b, "```diff\n-\t\tlog.Fatal(\"no config\")\n-\t\treturn\n+\t\tlog.Fatal(\"none\")\n```") {
		t.Errorf("gitea body %q", b)
	}
	// columns: "config" → "settings" in line 13
	f.EndLine = 13
	f.Suggestions = []contract.Suggestion{{StartLine: 13, StartColumn: 17, EndLine: 13, EndColumn: 23, Text: "settings"}}
	c = Build([]contract.Finding{f}, diff(), workflows.ReviewOptions{}, nil).Comments[0]
	if c.Suggestion != "\t\tlog.Fatal(\"no settings\")" || c.StartLine != 13 || c.Line != 13 {
		t.Errorf("column suggestion %q at %d-%d", c.Suggestion, c.StartLine, c.Line)
	}
}

// TestEscaping: a finding's text cannot close the marker, mention a team,
// inject HTML or a code fence; the marker stays first and parses back.
func TestEscaping(t *testing.T) {
	f := contract.Finding{Path: "main.go", StartLine: 13, Rule: "x`y", Tool: "<b>t</b>",
		Message: "--> <img src=x onerror=alert(1)> ping @acme/security ```\nfence"}
	c := Build([]contract.Finding{f}, diff(), workflows.ReviewOptions{}, nil).Comments[0]
	b := Body(c, Suggestion)
	for _, bad := range []string{"<img", "<b>", "-->  <", "@acme", "```"} {
		if strings.Contains(b[len(Marker(c.Fingerprint)):], bad) {
			t.Errorf("body holds %q:\n%s", bad, b)
		}
	}
	if !strings.Contains(b, "--&gt; &lt;img") || !strings.Contains(b, "@\u200dacme/security") {
		t.Errorf("body %q", b)
	}
	if FingerprintOf(b) != c.Fingerprint || strings.Count(b, "-->") != 1 {
		t.Errorf("marker: %q", b)
	}
	if FingerprintOf("text "+Marker(c.Fingerprint)) != "" {
		t.Error("a marker not at the start counts")
	}
}
