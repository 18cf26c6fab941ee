package decide

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/hookrun/hookrun/workflows"
)

// Object dedupe (issue #24). A delivery id is the forge's name for one
// sending of an event, not for the event: a captured signed body re-sent
// under a new delivery id, or one event sent by two hooks, would start
// its runs again. So every run a webhook starts also carries what the
// forge's object and its version are (queue.RunRequest.Object), which the
// queue dedupes in hookrun_deliveries beside the delivery key, in the same
// round trip and for the same DeliveryTTL: the same object under another
// delivery id answers 202 with the runs it started (PublishResult.SameObject).
//
// The object of an event (objectKey), by kind, always with the forge and
// the repository:
//   - comment: the pull request or issue number, the comment's id, action
//     and updated_at, and the command line the run is for (one run per
//     distinct command line of a comment);
//   - pull_request: the number, action, head SHA, updated_at, the label of
//     labeled/unlabeled and the user of assigned/review_requested (the
//     forge sends one event each, in the same second);
//   - issue: the number, action, updated_at, label and user likewise;
//   - push: the ref and the SHAs before and after.
//
// Every part is what the forge states; a new event about the object (a
// new head, an edit, another label) differs in one of them. Runs that are
// not a webhook's own dedupe by delivery id alone: an operator's replay
// (POST /api/v1/deliveries/{id}/replay) is a deliberate new run, as are
// re-runs, API starts and schedules; a /retry comment's re-runs are keyed
// by the comment (one /retry comment re-runs each workflow once).

// objectKey is the object and version of ev, for the run of command line
// line ("" for a run without a command): "" when ev has none (a chat
// command), which leaves that run to its delivery key.
func objectKey(ev *workflows.Event, line string) string {
	var b strings.Builder
	b.Grow(128 + len(ev.Repo) + len(ev.UpdatedAt) + len(line)) // one allocation for most keys
	part := func(s string) {
		b.WriteString(strconv.Itoa(len(s)))
		b.WriteByte(':')
		b.WriteString(s)
	}
	part(string(ev.Kind))
	part(ev.Repo)
	switch ev.Kind {
	case workflows.KindComment:
		if ev.Comment == nil {
			return ""
		}
		part(strconv.Itoa(ev.Number()))
		part(strconv.FormatInt(ev.Comment.ID, 10))
		part(ev.Action)
		part(ev.UpdatedAt)
		if ev.Comment.ID == 0 {
			// A review some forges send names no id: its text tells it apart.
			part(ev.Comment.Body)
		}
		part(line)
	case workflows.KindPullRequest, workflows.KindIssue:
		part(strconv.Itoa(ev.Number()))
		part(ev.Action)
		if ev.PullRequest != nil {
			part(ev.PullRequest.HeadSHA)
		}
		part(ev.UpdatedAt)
		part(ev.Label)
		part(ev.Target)
		part(strings.Join(ev.Labels, "\n"))
	case workflows.KindPush:
		if ev.Push == nil {
			return ""
		}
		part(ev.Push.Ref)
		part(ev.Push.Before)
		part(ev.Push.After)
	default:
		return ""
	}
	return b.String()
}

// MaxListedSkips is how many command lines past the limit the answer
// names one by one; the rest are counted in one entry.
const MaxListedSkips = 20

// commandBudget admits at most max distinct command lines of one comment
// (across every workflow that takes them, in workflow and then comment
// order) and collects the lines past it for the answer.
type commandBudget struct {
	max      int
	admitted []string
	over     int
	skips    []Skip
}

// admit reports whether workflow's run of line may start.
func (b *commandBudget) admit(workflow, line string) bool {
	if slices.Contains(b.admitted, line) {
		return true
	}
	if len(b.admitted) < b.max {
		b.admitted = append(b.admitted, line)
		return true
	}
	b.over++
	if len(b.skips) < MaxListedSkips {
		b.skips = append(b.skips, Skip{workflow, fmt.Sprintf("command line %q not run: a comment starts at most %d distinct command lines (commands.max_per_comment)",
			truncate(line, 80), b.max)})
	}
	return false
}

// skipped is what the answer lists of the lines past the limit.
func (b *commandBudget) skipped() []Skip {
	out := b.skips
	if n := b.over - len(b.skips); n > 0 {
		out = append(out, Skip{"", fmt.Sprintf("%d more command lines not run: a comment starts at most %d distinct command lines (commands.max_per_comment)", n, b.max)})
	}
	return out
}

// truncate cuts s to at most n bytes on a rune boundary, marking the cut.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
