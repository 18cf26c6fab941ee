package github

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	gh "github.com/google/go-github/v62/github"
)

// Hook is a repository webhook whose deliveries `hookrun recover` reads
// (GET /repos/{owner}/{repo}/hooks/{id}/deliveries). An App's webhook needs
// none: the App's own endpoints list it.
type Hook struct {
	Repo string // owner/name
	ID   int64
}

func (h Hook) String() string {
	if h.Repo == "" {
		return "the app's webhook"
	}
	return fmt.Sprintf("webhook %d of %s", h.ID, h.Repo)
}

// HookDelivery is one attempt GitHub made to deliver an event to a
// webhook; its GUID is the X-GitHub-Delivery hookrun deduplicates by (a
// redelivery keeps it).
type HookDelivery struct {
	Hook        Hook // zero for the App's webhook
	ID          int64
	GUID        string
	Event       string
	Action      string
	StatusCode  int
	Status      string
	DeliveredAt time.Time
	Redelivery  bool
}

// OK reports whether the delivery was answered 2xx.
func (d HookDelivery) OK() bool { return d.StatusCode >= 200 && d.StatusCode < 300 }

// deliveriesPerPage is GitHub's maximum.
const deliveriesPerPage = 100

// HookDeliveries lists the deliveries of hook (nil: the App's webhook,
// authenticated with the App's JWT) made since then, newest first, reading
// GitHub's cursor pages until they are older.
func (r *Reporter) HookDeliveries(ctx context.Context, hook *Hook, since time.Time) ([]HookDelivery, error) {
	what := "the app's webhook"
	if hook != nil {
		what = hook.String()
	}
	list, err := r.deliveriesLister(ctx, hook)
	if err != nil {
		return nil, fmt.Errorf("listing the deliveries of %s: %w", what, err)
	}
	var out []HookDelivery
	opt := &gh.ListCursorOptions{PerPage: deliveriesPerPage}
	for {
		page, resp, err := list(ctx, opt)
		if err != nil {
			return nil, fmt.Errorf("listing the deliveries of %s: %w", what, err)
		}
		older := false
		for _, d := range page {
			hd := HookDelivery{ID: d.GetID(), GUID: d.GetGUID(), Event: d.GetEvent(), Action: d.GetAction(),
				StatusCode: d.GetStatusCode(), Status: d.GetStatus(), DeliveredAt: d.GetDeliveredAt().Time, Redelivery: d.GetRedelivery()}
			if hook != nil {
				hd.Hook = *hook
			}
			if hd.DeliveredAt.Before(since) {
				older = true
				continue
			}
			out = append(out, hd)
		}
		if older || resp.Cursor == "" || len(page) == 0 {
			return out, nil
		}
		opt.Cursor = resp.Cursor
	}
}

type deliveriesPage func(context.Context, *gh.ListCursorOptions) ([]*gh.HookDelivery, *gh.Response, error)

func (r *Reporter) deliveriesLister(ctx context.Context, hook *Hook) (deliveriesPage, error) {
	if hook == nil {
		if r.app == nil {
			return nil, errors.New("no github app is configured (app_id): list a repository webhook instead")
		}
		return r.app.Apps.ListHookDeliveries, nil
	}
	owner, repo, ok := strings.Cut(hook.Repo, "/")
	if !ok || owner == "" || repo == "" || hook.ID <= 0 {
		return nil, fmt.Errorf("hook %q id %d: want owner/name and a positive id", hook.Repo, hook.ID)
	}
	c, err := r.hookClient(ctx, hook.Repo)
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context, o *gh.ListCursorOptions) ([]*gh.HookDelivery, *gh.Response, error) {
		return c.Repositories.ListHookDeliveries(ctx, owner, repo, hook.ID, o)
	}, nil
}

// hookClient is the client for a repository's webhook endpoints: the token,
// or the installation of the App on that repository.
func (r *Reporter) hookClient(ctx context.Context, repo string) (*gh.Client, error) {
	return r.clientOf(ctx, 0, repo)
}

// Redeliver asks GitHub to deliver d again (POST
// .../deliveries/{id}/attempts): same event, same GUID, so ingress
// deduplicates it as usual.
func (r *Reporter) Redeliver(ctx context.Context, d HookDelivery) error {
	var err error
	if d.Hook.Repo == "" {
		if r.app == nil {
			return fmt.Errorf("redelivering %s: no github app is configured", d.GUID)
		}
		_, _, err = r.app.Apps.RedeliverHookDelivery(ctx, d.ID)
	} else {
		owner, repo, _ := strings.Cut(d.Hook.Repo, "/")
		var c *gh.Client
		if c, err = r.hookClient(ctx, d.Hook.Repo); err == nil {
			_, _, err = c.Repositories.RedeliverHookDelivery(ctx, owner, repo, d.Hook.ID, d.ID)
		}
	}
	var accepted *gh.AcceptedError // GitHub answers 202 Accepted
	if err != nil && !errors.As(err, &accepted) {
		return fmt.Errorf("redelivering %s (%s): %w", d.GUID, d.Hook, err)
	}
	return nil
}
