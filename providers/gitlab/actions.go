package gitlab

import (
	"context"
	"fmt"
	"slices"
	"strings"

	gl "gitlab.com/gitlab-org/api/client-go"

	"github.com/hookrun/hookrun/providers/forge"
)

// This file is GitLab's forge.Actor: labels, assignees and state through
// PUT /projects/:id/issues/:iid (merge_requests/:iid for a merge request)
// with add_labels, remove_labels, assignee_ids (user ids looked up by
// username) and state_event; comments are notes.

// project is how i's project is named in paths: its id when known, else
// its path.
func project(i forge.Issue) any {
	if i.ProjectID != 0 {
		return i.ProjectID
	}
	return i.Repo
}

// update sends the PUT of i with the fields opt sets (as an issue's or a
// merge request's).
func (r *Reporter) update(ctx context.Context, i forge.Issue, opt *gl.UpdateIssueOptions) error {
	var err error
	if i.PullRequest {
		_, _, err = r.api.MergeRequests.UpdateMergeRequest(project(i), int64(i.Number), &gl.UpdateMergeRequestOptions{
			AddLabels: opt.AddLabels, RemoveLabels: opt.RemoveLabels, AssigneeIDs: opt.AssigneeIDs, StateEvent: opt.StateEvent}, gl.WithContext(ctx))
	} else {
		_, _, err = r.api.Issues.UpdateIssue(project(i), int64(i.Number), opt, gl.WithContext(ctx))
	}
	if err != nil {
		return fmt.Errorf("updating %s: %w", noteable{project: i.Repo, mr: i.PullRequest, iid: int64(i.Number)}, err)
	}
	return nil
}

// ListRepoLabels implements forge.Actor: GET /projects/:id/labels, every
// page (group labels the project inherits included).
func (r *Reporter) ListRepoLabels(ctx context.Context, i forge.Issue) ([]string, error) {
	var out []string
	opt := &gl.ListLabelsOptions{ListOptions: gl.ListOptions{PerPage: 100, Page: 1}, IncludeAncestorGroups: gl.Ptr(true)}
	for {
		ls, resp, err := r.api.Labels.ListLabels(project(i), opt, gl.WithContext(ctx))
		if err != nil {
			return nil, err
		}
		for _, l := range ls {
			out = append(out, l.Name)
		}
		if resp == nil || resp.NextPage == 0 {
			return out, nil
		}
		opt.Page = resp.NextPage
	}
}

// CreateLabel implements forge.Actor: POST /projects/:id/labels, grey.
func (r *Reporter) CreateLabel(ctx context.Context, i forge.Issue, name string) error {
	_, _, err := r.api.Labels.CreateLabel(project(i), &gl.CreateLabelOptions{Name: gl.Ptr(name), Color: gl.Ptr("#ededed")}, gl.WithContext(ctx))
	return err
}

// checkLabels refuses names GitLab's comma-joined label lists would split.
func checkLabels(names []string) error {
	for _, n := range names {
		if strings.Contains(n, ",") {
			return fmt.Errorf("label %q has a comma, which GitLab's label lists cannot carry", n)
		}
	}
	return nil
}

// AddLabels implements forge.Actor: add_labels.
func (r *Reporter) AddLabels(ctx context.Context, i forge.Issue, names []string) error {
	if err := checkLabels(names); err != nil {
		return err
	}
	l := gl.LabelOptions(names)
	return r.update(ctx, i, &gl.UpdateIssueOptions{AddLabels: &l})
}

// RemoveLabels implements forge.Actor: remove_labels.
func (r *Reporter) RemoveLabels(ctx context.Context, i forge.Issue, names []string) error {
	if err := checkLabels(names); err != nil {
		return err
	}
	l := gl.LabelOptions(names)
	return r.update(ctx, i, &gl.UpdateIssueOptions{RemoveLabels: &l})
}

// assignees are the ids of i's assignees.
func (r *Reporter) assignees(ctx context.Context, i forge.Issue) ([]int64, error) {
	var ids []int64
	if i.PullRequest {
		mr, _, err := r.api.MergeRequests.GetMergeRequest(project(i), int64(i.Number), nil, gl.WithContext(ctx))
		if err != nil {
			return nil, err
		}
		for _, a := range mr.Assignees {
			ids = append(ids, a.ID)
		}
		return ids, nil
	}
	is, _, err := r.api.Issues.GetIssue(project(i), int64(i.Number), gl.WithContext(ctx))
	if err != nil {
		return nil, err
	}
	for _, a := range is.Assignees {
		ids = append(ids, a.ID)
	}
	return ids, nil
}

// userID is the id of the user login (GET /users?username=).
func (r *Reporter) userID(ctx context.Context, login string) (int64, error) {
	us, _, err := r.api.Users.ListUsers(&gl.ListUsersOptions{Username: gl.Ptr(login)}, gl.WithContext(ctx))
	if err != nil {
		return 0, fmt.Errorf("looking up user %s: %w", login, err)
	}
	for _, u := range us {
		if strings.EqualFold(u.Username, login) {
			return u.ID, nil
		}
	}
	return 0, fmt.Errorf("looking up user %s: no such user", login)
}

// assign adds or removes logins: the whole new assignee_ids.
func (r *Reporter) assign(ctx context.Context, i forge.Issue, logins []string, add bool) error {
	have, err := r.assignees(ctx, i)
	if err != nil {
		return err
	}
	want := slices.Clone(have)
	for _, l := range logins {
		id, err := r.userID(ctx, l)
		if err != nil {
			return err
		}
		want = forge.Toggle(want, id, add)
	}
	if slices.Equal(want, have) {
		return nil
	}
	if len(want) == 0 {
		want = []int64{0} // GitLab: 0 or an empty value unassigns everyone
	}
	return r.update(ctx, i, &gl.UpdateIssueOptions{AssigneeIDs: &want})
}

// AddAssignees implements forge.Actor.
func (r *Reporter) AddAssignees(ctx context.Context, i forge.Issue, logins []string) error {
	return r.assign(ctx, i, logins, true)
}

// RemoveAssignees implements forge.Actor.
func (r *Reporter) RemoveAssignees(ctx context.Context, i forge.Issue, logins []string) error {
	return r.assign(ctx, i, logins, false)
}

// SetState implements forge.Actor: state_event close or reopen; GitLab
// records no reason.
func (r *Reporter) SetState(ctx context.Context, i forge.Issue, state, _ string) error {
	ev := "close"
	if state == "open" {
		ev = "reopen"
	}
	return r.update(ctx, i, &gl.UpdateIssueOptions{StateEvent: gl.Ptr(ev)})
}

// Comment implements forge.Actor: a note, unless one of hookrun's own
// notes on i (any user's, when the bot cannot be learned) contains marker.
func (r *Reporter) Comment(ctx context.Context, i forge.Issue, marker, body string) (bool, error) {
	t := &thread{r: r, n: noteable{project: i.Repo, mr: i.PullRequest, iid: int64(i.Number)}}
	for page := 1; page != 0; {
		list, next, err := t.List(ctx, page)
		if err != nil {
			return false, err
		}
		for _, c := range list {
			if c.Ours && strings.Contains(c.Body, marker) { // a marker in someone else's note does not count
				return false, nil
			}
		}
		page = next
	}
	if _, err := t.Create(ctx, body); err != nil {
		return false, err
	}
	return true, nil
}

var (
	_ forge.Actor = (*Reporter)(nil)
	_ forge.Actor = (*Forge)(nil)
)
