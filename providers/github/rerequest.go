package github

import (
	"errors"

	"github.com/hookrun/hookrun/providers/forge"
	"github.com/hookrun/hookrun/providers/internal/hookbody"
	"github.com/hookrun/hookrun/workflows"
)

// The Re-run buttons of GitHub's checks UI: a check_run or check_suite
// delivery (ghCheckRun, ghCheckSuite) with action rerequested, sent to the
// App that created the check run or suite. Both normalize to
// workflows.KindRerequest; their other actions (created, completed,
// requested, requested_action) are not handled.
const actionRerequested = "rerequested"

// What a check_run or check_suite payload lacks, wrapped with
// forge.ErrMalformedPayload.
var (
	errNoCheckRun   = errors.New("payload has no check_run")
	errNoCheckSuite = errors.New("payload has no check_suite")
	errNoHeadSHA    = errors.New("payload has no head_sha")
)

// checkPull is a pull request as a check run or suite lists it (go-github's
// PullRequest: number, head and base only).
type checkPull struct {
	Number int `json:"number"`
}

// checkSuite is go-github's CheckSuite, as far as normalization reads it.
type checkSuite struct {
	HeadSHA      string       `json:"head_sha"`
	PullRequests []*checkPull `json:"pull_requests"`
}

// checkRun is go-github's CheckRun, as far as normalization reads it.
type checkRun struct {
	HeadSHA      string       `json:"head_sha"`
	ExternalID   string       `json:"external_id"`
	PullRequests []*checkPull `json:"pull_requests"`
}

// checkRunEvent and checkSuiteEvent are go-github's CheckRunEvent and
// CheckSuiteEvent.
type checkRunEvent struct {
	hookbody.Common
	CheckRun *checkRun `json:"check_run"`
}

type checkSuiteEvent struct {
	hookbody.Common
	CheckSuite *checkSuite `json:"check_suite"`
}

// githubRerequest maps a rerequested check run (the hookrun run its
// external_id names) or check suite (every failed run of its head SHA)
// onto a KindRerequest event. The payload carries no role of the
// requester: Author is the sender, whose permission on the repository
// ingress looks up (Forge.Association).
func githubRerequest(eventName string, c *hookbody.Common, sha, runID string, prs []*checkPull) (*workflows.Event, error) {
	switch {
	case c.Repo == nil:
		return nil, forge.Malformed(Name, eventName, hookbody.ErrNoRepository)
	case sha == "":
		return nil, forge.Malformed(Name, eventName, errNoHeadSHA)
	case eventName == ghCheckRun && runID == "":
		// Not one of hookrun's check runs: it sets external_id to the run.
		return nil, forge.Unhandled(Name, eventName+" without external_id")
	}
	ev := hookbody.Base(c)
	ev.Kind = workflows.KindRerequest
	ev.Author = c.Sender.Login
	ev.Rerequest = &workflows.Rerequest{RunID: runID, HeadSHA: sha}
	for _, pr := range prs {
		if pr != nil && pr.Number > 0 {
			ev.Rerequest.PullRequests = append(ev.Rerequest.PullRequests, pr.Number)
		}
	}
	return ev, nil
}

// rerequested is nil for a rerequested delivery, else the unhandled error
// of its action.
func rerequested(eventName, action string) error {
	if action != actionRerequested {
		return forge.Unhandled(Name, eventName+" "+action)
	}
	return nil
}

func githubCheckRun(p *checkRunEvent) (*workflows.Event, error) {
	if err := rerequested(ghCheckRun, p.Action); err != nil {
		return nil, err
	}
	if p.CheckRun == nil {
		return nil, forge.Malformed(Name, ghCheckRun, errNoCheckRun)
	}
	return githubRerequest(ghCheckRun, &p.Common, p.CheckRun.HeadSHA, p.CheckRun.ExternalID, p.CheckRun.PullRequests)
}

func githubCheckSuite(p *checkSuiteEvent) (*workflows.Event, error) {
	if err := rerequested(ghCheckSuite, p.Action); err != nil {
		return nil, err
	}
	if p.CheckSuite == nil {
		return nil, forge.Malformed(Name, ghCheckSuite, errNoCheckSuite)
	}
	return githubRerequest(ghCheckSuite, &p.Common, p.CheckSuite.HeadSHA, "", p.CheckSuite.PullRequests)
}
