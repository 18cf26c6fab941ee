package gitlab

import (
	"testing"

	"github.com/hookrun/hookrun/providers/internal/review"
)

// TestInert: inertMarkdown: a line whose first character after blanks is '/' gets its '/'
// escaped, once; fenced code, indented code and hookrun's marker lines are
// left as they are, and fences stop being trusted after anything that could
// pair them differently on GitLab.
func TestInert(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"line", "/approve", `\/approve`},
		{"lines", "Looks fine.\n/approve\n  /merge\n/label ~bug", "Looks fine.\n\\/approve\n  \\/merge\n\\/label ~bug"},
		{"escaped once", "\\/approve\n \\/merge", "\\/approve\n \\/merge"},
		{"inline slash", "a/b and 1/2 stay", "a/b and 1/2 stay"},
		{"invisible first", "\u200b/approve", "\u200b\\/approve"},
		{"carriage return", "ok\r\n/approve\r", "ok\n\\/approve"},
		{"indented code", "text\n\n    /usr/bin/env\n\t/approve", "text\n\n    /usr/bin/env\n\t/approve"},
		{"fence", "x\n```sh\n/approve\n  /merge\n```\n/merge", "x\n```sh\n/approve\n  /merge\n```\n\\/merge"},
		{"tilde fence", "~~~\n/approve\n~~~\n/close", "~~~\n/approve\n~~~\n\\/close"},
		{"longer fence", "````\n```\n/approve\n````\n/close", "````\n```\n/approve\n````\n\\/close"},
		{"unclosed fence", "```\n/approve", "```\n/approve"},
		{"markers", "<!-- hookrun:wf -->\n<!-- hookrun-run:r -->\n```\n/approve\n```", "<!-- hookrun:wf -->\n<!-- hookrun-run:r -->\n```\n/approve\n```"},
		{"no fence with a backtick in its info", "``` a`b\n/approve\n```\n/merge", "``` a`b\n\\/approve\n```\n/merge"},
		// GitLab: the HTML block holds the first ```; the third closes the
		// fence the second opens, and /approve is a paragraph.
		{"html block", "<div>\n```\n\n```\n\n```\n/approve\n```", "<div>\n```\n\n```\n\n```\n\\/approve\n```"},
		{"comment block", "<!--\n\n```\n-->\n/approve\n```", "<!--\n\n```\n-->\n\\/approve\n```"},
		{"indented fence", "  ```\n\n```\n/approve\n```", "  ```\n\n```\n\\/approve\n```"},
		{"closed with trailing blanks", "```\nx\n```  \n/approve\n```\n/merge\n```", "```\nx\n```  \n\\/approve\n```\n\\/merge\n```"},
		{"closed indented", "```\n/a\n  ```\n/approve", "```\n/a\n  ```\n\\/approve"},
		{"multi-line quote", ">>>\n```\n>>>\n/approve\n```", ">>>\n```\n>>>\n\\/approve\n```"},
		{"front matter", "---\n```\n---\n/approve\n```", "---\n```\n---\n\\/approve\n```"},
	} {
		if got := inertMarkdown(tc.in); got != tc.want {
			t.Errorf("%s: inertMarkdown(%q)\n = %q\nwant %q", tc.name, tc.in, got, tc.want)
		}
		if got := inertMarkdown(tc.want); got != tc.want {
			t.Errorf("%s: Inert is not idempotent: inertMarkdown(%q) = %q", tc.name, tc.want, got)
		}
	}
}

// TestInertLeavesEscapeAlone: what Escape and Body write is inert already,
// and Inert does not escape it twice.
func TestInertLeavesEscapeAlone(t *testing.T) {
	for _, s := range []string{"/approve", "looks fine\n/approve\n  /merge\n\t/label ~bug", "<!-- x -->\n/merge", "```\n/approve\n```"} {
		if e := review.Escape(s); inertMarkdown(e) != e {
			t.Errorf("inertMarkdown(review.Escape(%q)) = %q, want %q", s, inertMarkdown(e), e)
		}
	}
}
