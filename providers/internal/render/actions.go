package render

import (
	"strings"

	"github.com/hookrun/hookrun/runner/contract"
)

// maxActionNote bounds the characters of one action's reason in the
// comment (a forge's error can be long).
const maxActionNote = 300

// acted is the comment's "Actions" section: what of the run's
// actions.json was applied, refused (with the reason) and failed. What
// and reasons carry text a step wrote (labels, logins): each is shown as
// inline code, never as markdown of its own.
func acted(o *contract.ActionsOutcome) string {
	if o == nil || len(o.Applied)+len(o.Refused)+len(o.Failed) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("**Actions**\n\n")
	line := func(mark, verb string, n contract.ActionNote) {
		b.WriteString("- " + mark + " " + inlineCode(oneLine(n.What)))
		if n.Reason != "" {
			b.WriteString(" " + verb + " " + inlineCode(cutRunes(oneLine(n.Reason), maxActionNote)))
		}
		b.WriteString("\n")
	}
	for _, n := range o.Applied {
		line("✅", "—", n)
	}
	for _, n := range o.Refused {
		line("🚫", "refused:", n)
	}
	for _, n := range o.Failed {
		line("❌", "failed:", n)
	}
	return strings.TrimRight(b.String(), "\n")
}
