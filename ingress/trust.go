package ingress

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/hookrun/hookrun/providers/forge"
	"github.com/hookrun/hookrun/queue"
	"github.com/hookrun/hookrun/workflows"
)

// What ingress learns beyond the payload before it trusts an event (issue
// 13, "Trust boundary"):
//
//   - The head a comment-triggered run checks out. A comment payload may
//     name no head, and checking out the pull request's tip when the run
//     starts would run whatever a fork pushed after a maintainer's
//     `/review`. So every pull_request event that carries a head is
//     remembered in hookrun_heads (HeadStore) before matching, and a comment
//     that matched and was authorized is pinned to the remembered head, else
//     to the head the forge's API reports now (forge.Lookups.PullRequestHead,
//     bounded by LookupTimeout). When neither knows it, the run request is
//     Refused: the runner fails it visibly and never runs the tip in its
//     place.
//   - The author association of events whose payloads carry none: the
//     author's role from the forge's API (forge.Lookups.Association: a
//     project member's access level, a user's permission on the
//     repository), cached here for at most AssociationTTL. A failed lookup
//     leaves NONE (fail closed) and says so in the skip reason.

// Defaults for TrustConfig.
const (
	DefaultLookupTimeout  = 2 * time.Second
	DefaultAssociationTTL = 5 * time.Minute
	MaxAssociationTTL     = 5 * time.Minute // a member removed from a project is trusted at most this long
	maxAssociationEntries = 10000
)

// HeadStore remembers the head of each pull or merge request ingress has
// seen in a pull_request event, shared by every ingress replica.
// *queue.HeadStore satisfies it.
type HeadStore interface {
	// Put records h as the head of pull request number of repo, seen at now.
	Put(ctx context.Context, forge workflows.Forge, repo string, number int, h workflows.Head, now time.Time) error
	// Get returns the head last recorded and when; ok is false for none.
	Get(ctx context.Context, forge workflows.Forge, repo string, number int) (h workflows.Head, seenAt time.Time, ok bool, err error)
}

// TrustConfig is what the server uses to pin comment-triggered runs to a
// head and to learn the roles of authors whose payloads carry none; the
// lookups themselves are the forges' (Config.Forges). Without a forge's
// API credentials, a comment whose head HeadStore does not know is
// Refused, and its events other than pushes stay NONE.
type TrustConfig struct {
	// Heads remembers pull request heads from pull_request events. Default:
	// the publisher's own store when it is a *queue.Queue.
	Heads HeadStore
	// LookupTimeout bounds each forge API lookup (and each HeadStore read),
	// so that a forge that is down delays a delivery by at most this much.
	// Default 2s.
	LookupTimeout time.Duration
	// AssociationTTL is how long a looked-up association is reused for the
	// same project and user. Default and maximum 5m.
	AssociationTTL time.Duration
}

func (c *TrustConfig) setDefaults() {
	if c.LookupTimeout == 0 {
		c.LookupTimeout = DefaultLookupTimeout
	}
	if c.AssociationTTL == 0 {
		c.AssociationTTL = DefaultAssociationTTL
	}
}

// Validate reports every problem of a defaulted c.
func (c *TrustConfig) Validate() error {
	var errs []error
	if c.LookupTimeout < 0 {
		errs = append(errs, errors.New("checking lookup timeout: must not be negative"))
	}
	if c.AssociationTTL < 0 || c.AssociationTTL > MaxAssociationTTL {
		errs = append(errs, fmt.Errorf("checking association ttl: must be between 0 and %s, got %s", MaxAssociationTTL, c.AssociationTTL))
	}
	return errors.Join(errs...)
}

// headsOf is the publisher's head store, if it has one.
func headsOf(pub Publisher) HeadStore {
	if q, ok := pub.(interface{ Heads() *queue.HeadStore }); ok {
		if hs := q.Heads(); hs != nil {
			return hs
		}
	}
	return nil
}

// lookupCtx bounds a lookup made for a delivery. The client going away does
// not cancel it, as it does not cancel the publish.
func (s *Server) lookupCtx(parent context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(parent), s.cfg.Trust.LookupTimeout)
}

// rememberHead records the head of a pull_request event in the head store,
// in the background; the returned wait blocks until the write is done (the
// delivery is answered after it). A failure is logged: a later comment then
// falls back to the forge's API.
func (s *Server) rememberHead(ctx context.Context, ev *workflows.Event) (wait func()) {
	pr := ev.PullRequest
	if s.cfg.Trust.Heads == nil || ev.Kind != workflows.KindPullRequest || pr == nil || pr.HeadSHA == "" || pr.Number <= 0 {
		return func() {}
	}
	h := workflows.Head{SHA: pr.HeadSHA, HeadRef: pr.HeadRef, BaseRef: pr.BaseRef, Fork: pr.Fork}
	forge, repo, number := ev.Forge, ev.Repo, pr.Number
	done := make(chan struct{})
	go func() {
		defer close(done)
		wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.cfg.PublishTimeout)
		defer cancel()
		if err := s.cfg.Trust.Heads.Put(wctx, forge, repo, number, h, s.now()); err != nil {
			s.logger.Warn("remembering the head of a pull request; comments on it fall back to the forge API",
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
func (s *Server) pinHead(ctx context.Context, ev *workflows.Event) (refused string) {
	pr := ev.PullRequest
	if ev.Kind != workflows.KindComment || pr == nil || pr.HeadSHA != "" {
		return ""
	}
	log := s.logger.With("forge", ev.Forge, "repo", ev.Repo, "number", pr.Number, "delivery", ev.DeliveryID)
	var why []string
	if hs := s.cfg.Trust.Heads; hs == nil {
		why = append(why, "no head store is configured")
	} else {
		lctx, cancel := s.lookupCtx(ctx)
		h, seen, ok, err := hs.Get(lctx, ev.Forge, ev.Repo, pr.Number)
		cancel()
		switch {
		case err != nil:
			log.Warn("reading the remembered head of a pull request", "err", err)
			why = append(why, "reading the head remembered from its pull_request events failed")
		case ok:
			applyHead(pr, h)
			log.Debug("pinned a comment's runs to the head of the latest pull_request event", "sha", h.SHA, "seen_at", seen)
			return ""
		default:
			why = append(why, "no pull_request event of it has been seen")
		}
	}
	lookup := s.cfg.Forges.Get(ev.Forge)
	if lookup.Credentials() != nil {
		why = append(why, fmt.Sprintf("no %s API credentials are configured to look it up", ev.Forge))
	} else {
		lctx, cancel := s.lookupCtx(ctx)
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
// whose payload carries none from the role its
// forge's API reports, cached. It returns "" when the association was
// looked up or the payload carries it, else why it could not be (the
// event then stays NONE), for skip reasons: the forge's words.
func (s *Server) associate(ctx context.Context, ev *workflows.Event) (note string) {
	if ev.Kind == workflows.KindPush {
		return ""
	}
	key := assocKey{forge: ev.Forge, project: ev.ProjectID, user: ev.AuthorID, repo: strings.ToLower(ev.Repo), login: strings.ToLower(ev.Author)}
	if a, ok := s.assoc.get(key, s.now()); ok {
		ev.AuthorAssociation = a
		return ""
	}
	lctx, cancel := s.lookupCtx(ctx)
	a, err := s.cfg.Forges.Get(ev.Forge).Association(lctx, ev)
	cancel()
	switch {
	case errors.Is(err, forge.ErrAssociationInPayload), errors.Is(err, forge.ErrNotConfigured):
		// The payload's answer stands, or the event's forge is not one
		// hookrun was configured to ask.
		return ""
	case errors.Is(err, forge.ErrNoCredentials):
		return err.Error()
	case err != nil:
		s.logger.Warn("looking up an author's role; treating the author as NONE", "forge", ev.Forge, "repo", ev.Repo,
			"project_id", ev.ProjectID, "author_id", ev.AuthorID, "author", ev.Author, "delivery", ev.DeliveryID, "err", err)
		return err.Error()
	}
	s.assoc.put(key, a, s.now())
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

var _ HeadStore = (*queue.HeadStore)(nil)
