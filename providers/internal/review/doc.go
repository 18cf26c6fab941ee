// Package review turns a run's findings (contract.Results) into one
// review on a pull or merge request, as the forges' reporters post it
// when the workflow sets report.review.
//
// The diff (ParsePatch of each file's patch, ParseUnified of a whole diff)
// says which lines of the head the change added and which it shows as
// context. Build keeps the findings report.review.filter keeps, as
// reviewdog's filter modes: added (on an added line), diff_context (on a
// line the diff shows), file (in a changed file), none (all); those on a
// line the diff shows become inline comments, at most max_comments; the
// rest the filter keeps are listed in the review's body, and those it
// drops are counted, the first ListedMax listed, in the run's comment.
//
// Each comment starts with a hidden marker naming the workflow (Scope, a
// digest of its name) and the finding's fingerprint
// (contract.Finding.Fingerprint, of its rule, path, message and the text
// of its lines, not their number): a finding an earlier run of the
// workflow commented on is not commented again, and one no longer found
// is gone (its comment edited to say "fixed in <sha>", or its discussion
// resolved, as the forge allows). Another workflow's comments, and those
// from before the marker named the workflow, are left alone (Decide).
//
// A finding's text is a step's output, which a pull request's code can
// write: Body shows it as text (Escape: no HTML, so it cannot close the
// marker, no @mentions or references, no code spans, links or images, no
// line a forge takes for a quick action), and suggestions in fences longer
// than any backtick run of their text (a fenced diff when a line could be
// a quick action). A forge that runs quick actions in whatever its bot
// posts applies the quick action rule to every body itself, with Blank
// for where a line starts.
package review
