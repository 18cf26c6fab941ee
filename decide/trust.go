package decide

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/hookrun/hookrun/providers/forge"
	"github.com/hookrun/hookrun/stores"
	"github.com/hookrun/hookrun/workflows"
)

// What is learned beyond the payload before an event is trusted (issue
// 13, "Trust boundary"):
//
//   - The head a comment-triggered run checks out. A comment payload may
//     name no head, and checking out the pull request's tip when the run
//     starts would run whatever a fork pushed after a maintainer's
//     `/review`. So every pull_request event that carries a head is
//     remembered in hookrun_heads (HeadStore, RememberHead) before
//     matching, and a comment that matched and was authorized is pinned to
//     the remembered head, else to the head the forge's API reports now
//     (forge.Lookups.PullRequestHead, bounded by TrustConfig.LookupTimeout).
//     When neither knows it, the run request is Refused: the runner fails
//     it visibly and never runs the tip in its place.
//   - The author association of events whose payloads carry none: the
//     author's role from the forge's API (forge.Lookups.Association: a
//     project member's access level, a user's permission on the
//     repository), cached here for at most TrustConfig.AssociationTTL. A
//     failed lookup leaves NONE (fail closed) and says so in the skip
//     reason.

// maxAssociationEntries bounds the association cache.
const maxAssociationEntries = 10000

// HeadStore remembers the head of each pull or merge request seen in a
// pull_request event, shared by every ingress replica.
// *stores.HeadStore satisfies it.
type HeadStore interface {
	// Put records h as the head of pull request number of repo, seen at now.
	Put(ctx context.Context, forge workflows.Forge, repo string, number int, h workflows.Head, now time.Time) error
	// Get returns the head last recorded and when; ok is false for none.
	Get(ctx context.Context, forge workflows.Forge, repo string, number int) (h workflows.Head, seenAt time.Time, ok bool, err error)
}

// lookupCtx bounds a lookup made for an event. The client going away does
// not cancel it, as it does not cancel the publish.
func (d *Decider) lookupCtx(parent context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(parent), d.cfg.Trust.LookupTimeout)
}

// RememberHead records the head of a pull_request event in the head store,
// in the background; the returned wait blocks until the write is done (the
// delivery is answered after it). A failure is logged: a later comment then
// falls back to the forge's API.
func (d *Decider) RememberHead(ctx context.Context, ev *workflows.Event) (wait func()) {
	pr := ev.PullRequest
	if d.deps.Heads == nil || ev.Kind != workflows.KindPullRequest || pr == nil || pr.HeadSHA == "" || pr.Number <= 0 {
		return func() {}
	}
	h := workflows.Head{SHA: pr.HeadSHA, HeadRef: pr.HeadRef, BaseRef: pr.BaseRef, Fork: pr.Fork}
	forge, repo, number := ev.Forge, ev.Repo, pr.Number
	done := make(chan struct{})
	go func() {
		defer close(done)
		wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), d.cfg.HeadWriteTimeout)
		defer cancel()
		if err := d.deps.Heads.Put(wctx, forge, repo, number, h, d.now()); err != nil {
			d.log.Warn("remembering the head of a pull request; comments on it fall back to the forge API",
				"forge", forge, "repo", repo, "number", number, "err", err)
		}
	}()
	return func() { <-done }
}

// pinHead gives a comment on a pull request whose payload names no head
// the head that pull request had when the comment was accepted: the one
// remembered from its latest pull_request event, else the one the forge's
// API reports. It returns "" when the event needs no pinning or was
// pinned, else the reason the run must be refused.
func (d *Decider) pinHead(ctx context.Context, ev *workflows.Event) (refused string) {
	pr := ev.PullRequest
	if ev.Kind != workflows.KindComment || pr == nil || pr.HeadSHA != "" {
		return ""
	}
	log := d.log.With("forge", ev.Forge, "repo", ev.Repo, "number", pr.Number, "delivery", ev.DeliveryID)
	why, ok := d.rememberedHead(ctx, ev, log)
	if ok {
		return ""
	}
	lookup := d.deps.Forges.Get(ev.Forge)
	if lookup.Credentials() != nil {
		why = append(why, fmt.Sprintf("no %s API credentials are configured to look it up", ev.Forge))
	} else {
		lctx, cancel := d.lookupCtx(ctx)
		h, err := lookup.PullRequestHead(lctx, ev)
		cancel()
		if err == nil {
			applyHead(pr, h)
			log.Debug("pinned a comment's runs to the head the forge API reports", "sha", h.SHA)
			return ""
		}
		log.Warn("looking up the head of a pull request", "err", err)
		why = append(why, fmt.Sprintf("the %s API did not tell it: %v", ev.Forge, err))
	}
	refused = fmt.Sprintf("not run: the head commit of pull request #%d was not known when the comment was accepted (%s), "+
		"and hookrun does not check out whatever the pull request's tip is later in its place. Comment again to retry.",
		pr.Number, strings.Join(why, "; "))
	log.Warn("refusing a comment's runs: the pull request's head is unknown", "reason", refused)
	return refused
}

// rememberedHead pins ev's pull request to the head the head store
// remembers (ok), else says why it could not.
func (d *Decider) rememberedHead(ctx context.Context, ev *workflows.Event, log *slog.Logger) (why []string, ok bool) {
	hs := d.deps.Heads
	if hs == nil {
		return []string{"no head store is configured"}, false
	}
	pr := ev.PullRequest
	lctx, cancel := d.lookupCtx(ctx)
	h, seen, found, err := hs.Get(lctx, ev.Forge, ev.Repo, pr.Number)
	cancel()
	switch {
	case err != nil:
		log.Warn("reading the remembered head of a pull request", "err", err)
		return []string{"reading the head remembered from its pull_request events failed"}, false
	case found:
		applyHead(pr, h)
		log.Debug("pinned a comment's runs to the head of the latest pull_request event", "sha", h.SHA, "seen_at", seen)
		return nil, true
	}
	return []string{"no pull_request event of it has been seen"}, false
}

// applyHead pins pr to h. Fork becomes what is known of the head now: the
// comment payload's conservative true only stood for "unknown".
func applyHead(pr *workflows.PullRequest, h workflows.Head) {
	pr.HeadSHA = h.SHA
	if h.HeadRef != "" {
		pr.HeadRef = h.HeadRef
	}
	if h.BaseRef != "" {
		pr.BaseRef = h.BaseRef
	}
	pr.Fork = h.Fork
}

// associate sets the author association of an event other than a push
// whose payload carries none from the role its forge's API reports,
// cached. It returns "" when the association was looked up or the payload
// carries it, else why it could not be (the event then stays NONE), for
// skip reasons: the forge's words.
func (d *Decider) associate(ctx context.Context, ev *workflows.Event) (note string) {
	if ev.Kind == workflows.KindPush {
		return ""
	}
	key := assocKey{forge: ev.Forge, project: ev.ProjectID, user: ev.AuthorID, repo: strings.ToLower(ev.Repo), login: strings.ToLower(ev.Author)}
	if a, ok := d.assoc.get(key, d.now()); ok {
		ev.AuthorAssociation = a
		return ""
	}
	lctx, cancel := d.lookupCtx(ctx)
	a, err := d.deps.Forges.Get(ev.Forge).Association(lctx, ev)
	cancel()
	switch {
	case errors.Is(err, forge.ErrAssociationInPayload), errors.Is(err, forge.ErrNotConfigured):
		// The payload's answer stands, or the event's forge is not one
		// hookrun was configured to ask.
		return ""
	case errors.Is(err, forge.ErrNoCredentials):
		return err.Error()
	case err != nil:
		d.log.Warn("looking up an author's role; treating the author as NONE", "forge", ev.Forge, "repo", ev.Repo,
			"project_id", ev.ProjectID, "author_id", ev.AuthorID, "author", ev.Author, "delivery", ev.DeliveryID, "err", err)
		return err.Error()
	}
	d.assoc.put(key, a, d.now())
	ev.AuthorAssociation = a
	return ""
}

// assocCache keeps looked-up associations for ttl. Only answers are kept,
// never failures: a member must not be locked out for a TTL by one failed
// lookup.
type assocCache struct {
	ttl time.Duration

	mu sync.Mutex
	m  map[assocKey]assocEntry
}

// assocKey names whose role in what: the project's and author's numeric
// ids where the forge has them, the repository and login (lowercased:
// some forges' names are case-insensitive).
type assocKey struct {
	forge         workflows.Forge
	project, user int64
	repo, login   string
}

type assocEntry struct {
	assoc string
	at    time.Time
}

func newAssocCache(ttl time.Duration) *assocCache {
	return &assocCache{ttl: ttl, m: map[assocKey]assocEntry{}}
}

func (c *assocCache) get(k assocKey, now time.Time) (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[k]
	if !ok || now.Sub(e.at) >= c.ttl || now.Before(e.at) {
		return "", false
	}
	return e.assoc, true
}

func (c *assocCache) put(k assocKey, assoc string, now time.Time) {
	if c.ttl <= 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.m) >= maxAssociationEntries {
		for key, e := range c.m {
			if now.Sub(e.at) >= c.ttl {
				delete(c.m, key)
			}
		}
		for key := range c.m {
			if len(c.m) < maxAssociationEntries {
				break
			}
			delete(c.m, key)
		}
	}
	c.m[k] = assocEntry{assoc: assoc, at: now}
}

var _ HeadStore = (*stores.HeadStore)(nil)
