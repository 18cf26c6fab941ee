package sbx

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
)

// The failures of the troubleshooting table of "Run Harness Agents in
// Docker Sandboxes (sbx)". An error of this package whose cause sbx (or the
// agent in the sandbox) printed as one of the table's messages is a
// *KnownError wrapping one of them, and carries the table's fix.
var (
	ErrNotSignedIn          = errors.New("sbx is not signed in to Docker")
	ErrPolicyNotInitialized = errors.New("the global network policy of sbx has not been initialized")
	ErrAgentNotLoggedIn     = errors.New("the agent in the sandbox is not logged in to its model provider")
	ErrSandboxNotFound      = errors.New("the sandbox does not exist")
	ErrSandboxExists        = errors.New("the sandbox already exists")
	ErrRequestBlocked       = errors.New("a request from the agent was blocked by the sandbox's network policy")
)

// KnownError is a failure of the troubleshooting table: what sbx said, what
// it means and how to fix it.
type KnownError struct {
	Kind error  // one of the Err... values above
	Said string // the line sbx (or the agent) printed
	Fix  string // the table's fix, with the sandbox's name filled in
}

func (e *KnownError) Error() string {
	return fmt.Sprintf("%s (sbx said: %s); fix: %s", e.Kind, e.Said, e.Fix)
}

// Unwrap makes errors.Is(err, ErrNotSignedIn) and the like hold.
func (e *KnownError) Unwrap() error { return e.Kind }

// known is one row of the table: the message as a pattern over one line
// (case-insensitive, anchored where sbx's own "error:" form allows it, so
// that a failure that merely mentions the words keeps its own text), the
// error, and the fix. The sandbox's name, when the message names it, is
// the pattern's first group; NAME in the fix is replaced by it.
type known struct {
	pattern *regexp.Regexp
	kind    error
	fix     string
	agent   bool // printed by the agent inside the sandbox, not by sbx
}

var table = []known{
	{regexp.MustCompile(`(?i)^error: not signed in to docker\b|^(?:error: )?no valid user session found, please sign in to docker\b`),
		ErrNotSignedIn, "Run sbx login as the user that runs hookrun.", false},
	{regexp.MustCompile(`(?i)^error: (?:the )?global network policy has not been initialized\b`),
		ErrPolicyNotInitialized, "Run sbx policy init balanced.", false},
	{regexp.MustCompile(`(?i)\bnot logged in · please run /login\b`),
		ErrAgentNotLoggedIn, "Run sbx secret set anthropic, or sign in with /login inside sbx run --name NAME claude.", true},
	{regexp.MustCompile(`(?i)^error: sandbox ['"]([^'"]+)['"] not found$`),
		ErrSandboxNotFound, "Create the sandbox first, or check the name with sbx ls.", false},
	{regexp.MustCompile(`(?i)^error: sandbox ['"]([^'"]+)['"] already exists$`),
		ErrSandboxExists, "Reuse it with sbx exec, or remove it with sbx rm --force NAME.", false},
	{regexp.MustCompile(`(?i)\ba request from the agent is blocked\b`),
		ErrRequestBlocked, "Allow the host with sbx policy allow. sbx policy log shows blocked requests.", true},
}

// matchLine returns the known failure line describes, or nil. Only agent
// messages count when agentOnly is set. name is the sandbox the command
// was about; a message that names another sandbox is not ours.
func matchLine(line, name string, agentOnly bool) *KnownError {
	line = strings.TrimSpace(line)
	for _, k := range table {
		if agentOnly && !k.agent {
			continue
		}
		m := k.pattern.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		fixName := name
		if len(m) > 1 {
			if name != "" && m[1] != name {
				return nil
			}
			fixName = m[1]
		}
		if fixName == "" {
			fixName = "NAME"
		}
		return &KnownError{Kind: k.kind, Said: line, Fix: strings.ReplaceAll(k.fix, "NAME", fixName)}
	}
	return nil
}

// classify returns the known failure the output of a lifecycle command
// (create, rm, stop, ls) describes, or nil. Every line counts: sbx prints
// some failures after other lines.
func classify(out, name string) *KnownError {
	for _, line := range strings.Split(out, "\n") {
		if k := matchLine(line, name, false); k != nil {
			return k
		}
	}
	return nil
}

// classifyExec is classify for a failed `sbx exec`, whose output is mostly
// the command's own: sbx's messages count only as the last line of stderr,
// the agent's as the last line of stdout or stderr.
func classifyExec(stdout, stderr, name string) *KnownError {
	if k := matchLine(lastLine(stderr), name, false); k != nil {
		return k
	}
	return matchLine(lastLine(stdout), name, true)
}
