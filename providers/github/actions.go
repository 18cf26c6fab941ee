package github

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"

	gh "github.com/google/go-github/v62/github"

	"github.com/hookrun/hookrun/providers/forge"
)

// This file is the forge.Actor of GitHub and, where a Dialect says its API
// differs (labels by id, assignees through PATCH of the issue, no
// state_reason), of a forge modeled on it.

// issueClient is the client, owner and name of i's repository.
func (r *Reporter) issueClient(ctx context.Context, i forge.Issue) (*gh.Client, string, string, error) {
	owner, repo, ok := strings.Cut(i.Repo, "/")
	if !ok || owner == "" || repo == "" {
		return nil, "", "", fmt.Errorf("repository %q is not owner/name", i.Repo)
	}
	c, err := r.clientOf(ctx, i.InstallationID, i.Repo)
	if err != nil {
		return nil, "", "", err
	}
	return c, owner, repo, nil
}

// do sends one request built on c with body, decoding the answer into out.
func (r *Reporter) do(ctx context.Context, c *gh.Client, method, path string, body, out any) (*gh.Response, error) {
	var resp *gh.Response
	err := r.call(ctx, func() error {
		req, err := c.NewRequest(method, path, body)
		if err != nil {
			return err
		}
		resp, err = c.Do(ctx, req, out)
		return err
	})
	return resp, err
}

// repoLabels lists the repository's labels (GET /repos/{o}/{r}/labels,
// every page).
func (r *Reporter) repoLabels(ctx context.Context, i forge.Issue) ([]*gh.Label, error) {
	c, owner, repo, err := r.issueClient(ctx, i)
	if err != nil {
		return nil, err
	}
	var all []*gh.Label
	opts := &gh.ListOptions{PerPage: 100}
	for {
		var page []*gh.Label
		var resp *gh.Response
		if err := r.call(ctx, func() (err error) {
			page, resp, err = c.Issues.ListLabels(ctx, owner, repo, opts)
			return err
		}); err != nil {
			return nil, err
		}
		all = append(all, page...)
		if resp == nil || resp.NextPage == 0 {
			return all, nil
		}
		opts.Page = resp.NextPage
	}
}

// ListRepoLabels implements forge.Actor.
func (r *Reporter) ListRepoLabels(ctx context.Context, i forge.Issue) ([]string, error) {
	ls, err := r.repoLabels(ctx, i)
	if err != nil {
		return nil, err
	}
	out := make([]string, len(ls))
	for k, l := range ls {
		out[k] = l.GetName()
	}
	return out, nil
}

// CreateLabel implements forge.Actor: POST /repos/{o}/{r}/labels, grey.
func (r *Reporter) CreateLabel(ctx context.Context, i forge.Issue, name string) error {
	c, owner, repo, err := r.issueClient(ctx, i)
	if err != nil {
		return err
	}
	color := "ededed"
	if r.dialect().LabelColorHash {
		color = "#ededed"
	}
	_, err = r.do(ctx, c, "POST", fmt.Sprintf("repos/%s/%s/labels", owner, repo), map[string]string{"name": name, "color": color}, nil)
	return err
}

// labelIDs are the ids of the labels names on i's repository.
func (r *Reporter) labelIDs(ctx context.Context, i forge.Issue, names []string) ([]int64, error) {
	ls, err := r.repoLabels(ctx, i)
	if err != nil {
		return nil, err
	}
	ids := make([]int64, 0, len(names))
	for _, n := range names {
		k := slices.IndexFunc(ls, func(l *gh.Label) bool { return l.GetName() == n })
		if k < 0 {
			return nil, fmt.Errorf("label %q does not exist on %s", n, i.Repo)
		}
		ids = append(ids, ls[k].GetID())
	}
	return ids, nil
}

// AddLabels implements forge.Actor: POST /repos/{o}/{r}/issues/{n}/labels
// with the names, or the ids (Dialect.LabelsByID).
func (r *Reporter) AddLabels(ctx context.Context, i forge.Issue, names []string) error {
	c, owner, repo, err := r.issueClient(ctx, i)
	if err != nil {
		return err
	}
	path := fmt.Sprintf("repos/%s/%s/issues/%d/labels", owner, repo, i.Number)
	var body any = map[string][]string{"labels": names}
	if r.dialect().LabelsByID {
		ids, err := r.labelIDs(ctx, i, names)
		if err != nil {
			return err
		}
		body = map[string][]int64{"labels": ids}
	}
	_, err = r.do(ctx, c, "POST", path, body, nil)
	return err
}

// RemoveLabels implements forge.Actor: DELETE
// /repos/{o}/{r}/issues/{n}/labels/{name} ({id}: Dialect.LabelsByID) for each; a label
// the issue does not carry (404) is fine.
func (r *Reporter) RemoveLabels(ctx context.Context, i forge.Issue, names []string) error {
	c, owner, repo, err := r.issueClient(ctx, i)
	if err != nil {
		return err
	}
	keys := names
	if r.dialect().LabelsByID {
		ids, err := r.labelIDs(ctx, i, names)
		if err != nil {
			return err
		}
		keys = make([]string, len(ids))
		for k, id := range ids {
			keys[k] = fmt.Sprint(id)
		}
	}
	for _, k := range keys {
		_, err := r.do(ctx, c, "DELETE", fmt.Sprintf("repos/%s/%s/issues/%d/labels/%s", owner, repo, i.Number, url.PathEscape(k)), nil, nil)
		if err != nil && !isStatus(err, http.StatusNotFound) {
			return err
		}
	}
	return nil
}

// assignees are the logins assigned to i (GET the issue). Only the
// assignees are decoded: with AssigneesByEdit's dialect the rest of the
// issue has another shape (its repository's owner is a login, not a
// user).
func (r *Reporter) assignees(ctx context.Context, c *gh.Client, owner, repo string, n int) ([]string, error) {
	var is struct {
		Assignees []struct {
			Login string `json:"login"`
		} `json:"assignees"`
	}
	if _, err := r.do(ctx, c, "GET", fmt.Sprintf("repos/%s/%s/issues/%d", owner, repo, n), nil, &is); err != nil {
		return nil, err
	}
	var out []string
	for _, u := range is.Assignees {
		out = append(out, u.Login)
	}
	return out, nil
}

// assign adds (or removes) logins: POST (DELETE)
// /repos/{o}/{r}/issues/{n}/assignees; with Dialect.AssigneesByEdit, the
// issue's PATCH with the whole new list.
func (r *Reporter) assign(ctx context.Context, i forge.Issue, logins []string, add bool) error {
	c, owner, repo, err := r.issueClient(ctx, i)
	if err != nil {
		return err
	}
	if !r.dialect().AssigneesByEdit {
		method := "POST"
		if !add {
			method = "DELETE"
		}
		_, err := r.do(ctx, c, method, fmt.Sprintf("repos/%s/%s/issues/%d/assignees", owner, repo, i.Number),
			map[string][]string{"assignees": logins}, nil)
		return err
	}
	have, err := r.assignees(ctx, c, owner, repo, i.Number)
	if err != nil {
		return err
	}
	want := slices.Clone(have)
	for _, l := range logins {
		want = forge.Toggle(want, l, add)
	}
	if slices.Equal(want, have) {
		return nil
	}
	if want == nil {
		want = []string{}
	}
	_, err = r.do(ctx, c, "PATCH", fmt.Sprintf("repos/%s/%s/issues/%d", owner, repo, i.Number), map[string][]string{"assignees": want}, nil)
	return err
}

// AddAssignees implements forge.Actor.
func (r *Reporter) AddAssignees(ctx context.Context, i forge.Issue, logins []string) error {
	return r.assign(ctx, i, logins, true)
}

// RemoveAssignees implements forge.Actor.
func (r *Reporter) RemoveAssignees(ctx context.Context, i forge.Issue, logins []string) error {
	return r.assign(ctx, i, logins, false)
}

// SetState implements forge.Actor: PATCH /repos/{o}/{r}/issues/{n} with
// state and state_reason (GitHub knows completed and not_planned:
// duplicate is sent as not_planned; reopening sends reopened), unless
// Dialect.NoStateReason.
func (r *Reporter) SetState(ctx context.Context, i forge.Issue, state, reason string) error {
	c, owner, repo, err := r.issueClient(ctx, i)
	if err != nil {
		return err
	}
	body := map[string]string{"state": state}
	if !r.dialect().NoStateReason {
		switch {
		case state == "open":
			body["state_reason"] = "reopened"
		case reason == "duplicate":
			body["state_reason"] = "not_planned"
		case reason != "":
			body["state_reason"] = reason
		}
	}
	_, err = r.do(ctx, c, "PATCH", fmt.Sprintf("repos/%s/%s/issues/%d", owner, repo, i.Number), body, nil)
	return err
}

// Comment implements forge.Actor: it lists i's comments (every page) and
// posts body (POST /repos/{o}/{r}/issues/{n}/comments) unless one of
// hookrun's own (any, when its login cannot be learned) contains marker.
func (r *Reporter) Comment(ctx context.Context, i forge.Issue, marker, body string) (bool, error) {
	c, owner, repo, err := r.issueClient(ctx, i)
	if err != nil {
		return false, err
	}
	login := r.botLogin(ctx) // a marker in someone else's comment does not count
	opts := &gh.IssueListCommentsOptions{ListOptions: gh.ListOptions{PerPage: 100}}
	for {
		var list []*gh.IssueComment
		var resp *gh.Response
		if err := r.call(ctx, func() (err error) {
			list, resp, err = c.Issues.ListComments(ctx, owner, repo, i.Number, opts)
			return err
		}); err != nil {
			return false, fmt.Errorf("listing comments of %s: %w", i, err)
		}
		for _, cm := range list {
			if strings.Contains(cm.GetBody(), marker) && (login == "" || strings.EqualFold(cm.GetUser().GetLogin(), login)) {
				return false, nil
			}
		}
		if resp == nil || resp.NextPage == 0 {
			break
		}
		opts.Page = resp.NextPage
	}
	if _, err := r.do(ctx, c, "POST", fmt.Sprintf("repos/%s/%s/issues/%d/comments", owner, repo, i.Number), map[string]string{"body": body}, nil); err != nil {
		return false, err
	}
	return true, nil
}

var (
	_ forge.Actor = (*Reporter)(nil)
	_ forge.Actor = (*Forge)(nil)
)
