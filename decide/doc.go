// Package decide is hookrun's decision: given a normalized event
// (workflows.Event), which workflows run and why each of the others does
// not. It takes no HTTP request and writes no run: ingress, the HTTP edge,
// verifies and normalizes a delivery through the forge registry, asks a
// Decider, persists the run requests it returns and answers with them and
// the skip reasons. The webhook, a replay, a re-run and a /retry comment
// all get their answer here, so the same event gets the same answer
// whichever way it arrives.
//
// A Decider is built from a Config (the rules: allow_repos, the comment
// commands, trust and changed-files bounds) and Deps (what it reads: the
// loaded workflows, the forge registry's lookups, the head store, the run
// records and the stored deliveries); a nil optional dependency turns off
// what needs it, which Deps documents field by field.
//
// Decider.Event matches an event against every workflow (workflows.Match),
// learns the changed files first when a workflow selects by paths
// (match.go), authorizes each match (workflows.Workflow.Authorize) after
// looking up the author's association when the payload carries none
// (trust.go), pins a comment's runs to its pull request's head (the head
// remembered from its pull_request events, else the forge API's; Refused
// when neither knows it), bounds the command lines of one comment
// (CommandsConfig.MaxPerComment) and gives each run the object it dedupes
// by (decide.go). A /retry comment (CommandsConfig.Retry) also selects the
// pull request's latest failed run of each workflow whose authorize policy
// admits the commenter, and a forge's rerequest (a check run's or suite's
// Re-run button) those of its head commit (both retry.go). Decider.Replay,
// Decider.Rerun and Decider.Chat are the same decision for a stored
// delivery, one finished run and a chat command.
package decide
