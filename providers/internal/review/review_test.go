package review

import (
	"fmt"
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

// lint is the Scope of the workflow the tests review for.
var lint = Scope("lint")

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
		p := Build(fs, diff(), workflows.ReviewOptions{Filter: tc.filter, MaxComments: 30}, lint, nil)
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
	first := Build(fs, diff(), workflows.ReviewOptions{MaxComments: 2}, lint, nil)
	if len(first.Comments) != 2 || messages(first.Kept) != "three" {
		t.Fatalf("comments %d kept %q", len(first.Comments), messages(first.Kept))
	}
	prev := map[string]bool{first.Comments[0].Key: true, first.Comments[1].Key: true, Key(lint, "0123456789abcdef0123456789abcdef"): true}
	// the same findings moved down a line, code unchanged: same fingerprints
	second := Build(fs[1:], diff(), workflows.ReviewOptions{MaxComments: 2}, lint, prev)
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
	p := Build([]contract.Finding{f}, diff(), workflows.ReviewOptions{}, lint, nil)
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
	c = Build([]contract.Finding{f}, diff(), workflows.ReviewOptions{}, lint, nil).Comments[0]
	if c.Suggestion != "\t\tlog.Fatal(\"no settings\")" || c.StartLine != 13 || c.Line != 13 {
		t.Errorf("column suggestion %q at %d-%d", c.Suggestion, c.StartLine, c.Line)
	}
}

// TestEscaping: a finding's text cannot close the marker, mention a team,
// inject HTML or a code fence; the marker stays first and parses back.
func TestEscaping(t *testing.T) {
	f := contract.Finding{Path: "main.go", StartLine: 13, Rule: "x`y", Tool: "<b>t</b>",
		Message: "--> <img src=x onerror=alert(1)> ping @acme/security ```\nfence"}
	c := Build([]contract.Finding{f}, diff(), workflows.ReviewOptions{}, lint, nil).Comments[0]
	b := Body(c, Suggestion)
	for _, bad := range []string{"<img", "<b>", "-->  <", "@acme", "```"} {
		if strings.Contains(b[len(Marker(c.Key)):], bad) {
			t.Errorf("body holds %q:\n%s", bad, b)
		}
	}
	if !strings.Contains(b, "--&gt; &lt;img") || !strings.Contains(b, "@\u200dacme/security") {
		t.Errorf("body %q", b)
	}
	if KeyOf(b) != c.Key || strings.Count(b, "-->") != 1 {
		t.Errorf("marker: %q", b)
	}
	if KeyOf("text "+Marker(c.Key)) != "" {
		t.Error("a marker not at the start counts")
	}
}

// TestEscapeHostile: what a pull request's code could make a finding say
// is shown as text on every forge: no line a GitLab quick action, no
// link, image or reference, no block or inline markup, no entity.
func TestEscapeHostile(t *testing.T) {
	zwj := "\u200d"
	for _, tc := range []struct{ in, want string }{
		{"/approve", `\/approve`},
		{"looks fine\n/approve\n  /merge\n\t/label ~bug", "looks fine\n\\/approve\n" + nbsp(2) + "\\/merge\n" + nbsp(4) + "\\/label \\~bug"},
		// Indented after a blank line: a code block would show the escapes.
		{"x\n\n    if a < b {\n\treturn a_b", "x\n\n" + nbsp(4) + "if a &lt; b \\{\n" + nbsp(4) + "return a\\_b"},
		{"ok\r\n/unassign", "ok\n\\/unassign"},
		{"x\n\r/approve", "x\n\\/approve"}, // GitLab drops \r before it looks for commands
		{"\u200b/approve", "\u200b\\/approve"},
		{"a/b and 1/2 stay", "a/b and 1/2 stay"},
		{"[click me](https://evil.example/x)", `\[click me\]\(https://evil.example/x\)`},
		{"![](https://evil.example/pixel.png)", `\!\[\]\(https://evil.example/pixel.png\)`},
		{"[a][1]\n[1]: https://evil.example", "\\[a\\]\\[1\\]\n\\[1\\]: https://evil.example"},
		{"<https://evil.example> &#x5b;x&#x5d;(u) &amp;", "&lt;https://evil.example&gt; \\&#" + zwj + "x5b;x\\&#" + zwj + "x5d;\\(u\\) \\&amp;"},
		{"@acme/sec #12 o/r#3 !4 %m ^a $x$ &5", "@" + zwj + "acme/sec #" + zwj + "12 o/r#" + zwj + "3 \\!4 \\%m \\^a \\$x\\$ \\&5"},
		{"**b** _e_ ~~s~~ `c` {+i+} \\[x](y)", "\\*\\*b\\*\\* \\_e\\_ \\~\\~s\\~\\~ \\`c\\` \\{+i+\\} \\\\\\[x\\]\\(y\\)"},
		{"# h\n- i\n+ j\n 12. n\n3) m\n---\n===\n| a | b |", "#" + zwj + " h\n\\- i\n\\+ j\n" + nbsp(1) + "12\\. n\n3\\) m\n\\---\n\\===\n\\| a \\| b \\|"},
		{"v1.2 - x + y = z", "v1.2 - x + y = z"},
	} {
		got := Escape(tc.in)
		if got != tc.want {
			t.Errorf("Escape(%q)\n = %q\nwant %q", tc.in, got, tc.want)
		}
		if err := inert(got); err != nil {
			t.Errorf("Escape(%q) = %q: %v", tc.in, got, err)
		}
	}
}

// nbsp is n no-break spaces, Escape's indentation.
func nbsp(n int) string { return strings.Repeat("\u00a0", n) }

// inert checks s as Escape leaves text: each character that could start
// markup escaped, no line starting with one, '@' and '#' joined.
func inert(s string) error {
	rs := []rune(s)
	start := true
	for i := 0; i < len(rs); i++ {
		r := rs[i]
		switch {
		case r == '\\':
			i++ // the escaped character
		case strings.HasPrefix(string(rs[i:]), "&lt;") || strings.HasPrefix(string(rs[i:]), "&gt;"):
			i += 3 // '<' or '>' as text
		case r == '\r' || strings.ContainsRune("<>&[]()!*_~|$%^{}`", r):
			return fmt.Errorf("%q unescaped at %d", r, i)
		case start && strings.ContainsRune("/-+=", r):
			return fmt.Errorf("a line starts with %q at %d", r, i)
		case start && (r == ' ' || r == '\t'):
			return fmt.Errorf("a line is indented with %q at %d (a code block)", r, i)
		case (r == '@' || r == '#') && (i+1 == len(rs) || rs[i+1] != '\u200d'):
			return fmt.Errorf("%q not joined at %d", r, i)
		}
		start = r == '\n' || start && Blank(r)
	}
	return nil
}

// TestSuggestionNoQuickAction: a suggestion a line of which GitLab could
// take for a quick action is shown as a fenced diff, whose lines start
// with - and +; one with // or /* lines stays a suggestion.
func TestSuggestionNoQuickAction(t *testing.T) {
	f := contract.Finding{Path: "main.go", StartLine: 13, Rule: "r", Message: "m",
		Suggestions: []contract.Suggestion{{StartLine: 13, Text: "```\n/approve\n```"}}}
	c := Build([]contract.Finding{f}, diff(), workflows.ReviewOptions{}, lint, nil).Comments[0]
	for _, syn := range []Syntax{Suggestion, SuggestionRange, FencedDiff} {
		b := Body(c, syn)
		if strings.Contains(b, "suggestion") || !strings.Contains(b, "````diff\n-\t\tlog.Fatal(\"no config\")\n+```\n+/approve\n+```\n````") {
			t.Errorf("syntax %d: body %q", syn, b)
		}
		for _, l := range strings.Split(b, "\n") {
			if strings.HasPrefix(strings.TrimLeft(l, " \t"), "/") {
				t.Errorf("syntax %d: line %q", syn, l)
			}
		}
	}
	f.Suggestions[0].Text = "// fixed\n/* too */"
	c = Build([]contract.Finding{f}, diff(), workflows.ReviewOptions{}, lint, nil).Comments[0]
	if b := Body(c, SuggestionRange); !strings.Contains(b, "```suggestion:-0+0\n// fixed\n/* too */\n```") {
		t.Errorf("body %q", b)
	}
}

// TestWorkflowScope: a workflow's review skips, counts and marks gone
// only its own earlier comments; another workflow's, and those from
// before markers named the workflow, are left alone.
func TestWorkflowScope(t *testing.T) {
	a := contract.Finding{Path: "main.go", StartLine: 13, Rule: "a", Message: "one"}
	b := contract.Finding{Path: "main.go", StartLine: 14, Rule: "b", Message: "two"}
	opts := workflows.ReviewOptions{MaxComments: 30}
	lintA := Build([]contract.Finding{a}, diff(), opts, lint, nil).Comments[0]
	ai := Scope("ai")
	aiB := Build([]contract.Finding{b}, diff(), opts, ai, nil).Comments[0]
	if lintA.Key == Key(ai, strings.TrimPrefix(lintA.Key, lint+":")) || ai == lint || len(ai) != 16 {
		t.Fatalf("keys %q %q", lintA.Key, aiB.Key)
	}
	oldB := "<!-- hookrun:finding:" + strings.TrimPrefix(aiB.Key, ai+":") + " -->\n**warning**"
	if KeyOf(oldB) != "" || KeyOf(Body(lintA, Suggestion)) != lintA.Key {
		t.Errorf("KeyOf: old %q, new %q", KeyOf(oldB), KeyOf(Body(lintA, Suggestion)))
	}
	earlier := map[string]int{lintA.Key: 1, aiB.Key: 2}
	// lint finds b (ai's finding) and no longer a: b is new for lint, a gone.
	var sum Summary
	plan, gone := Decide(&sum, []contract.Finding{b}, diff(), opts, "lint", earlier)
	if len(plan.Comments) != 1 || plan.Comments[0].Key != Key(lint, strings.TrimPrefix(aiB.Key, ai+":")) ||
		len(gone) != 1 || gone[0] != lintA.Key || sum.New != 1 || sum.Still != 0 || sum.Gone != 1 {
		t.Errorf("lint: comments %+v gone %q summary %+v", plan.Comments, gone, sum)
	}
	// ai finds b again: still, nothing new, lint's a not gone for ai.
	sum = Summary{}
	plan, gone = Decide(&sum, []contract.Finding{b}, diff(), opts, "ai", earlier)
	if len(plan.Comments) != 0 || len(gone) != 0 || sum.Still != 1 || sum.Gone != 0 {
		t.Errorf("ai: comments %+v gone %q summary %+v", plan.Comments, gone, sum)
	}
}
