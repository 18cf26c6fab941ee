package recovery

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/hookrun/hookrun/providers/github"
	"github.com/hookrun/hookrun/workflows"
)

// Lister is the forge side: providers/github.Reporter.
type Lister interface {
	HookDeliveries(ctx context.Context, hook *github.Hook, since time.Time) ([]github.HookDelivery, error)
	Redeliver(ctx context.Context, d github.HookDelivery) error
}

// Store tells whether hookrun holds what a delivery started
// (queue.Queue.DeliverySeen).
type Store interface {
	DeliverySeen(ctx context.Context, forge workflows.Forge, delivery string) (bool, error)
}

// Config says what to recover.
type Config struct {
	// Since is how far back to look; default 6h. GitHub keeps deliveries
	// for 3 days.
	Since time.Duration
	// App lists the GitHub App's webhook.
	App bool
	// Hooks are repository webhooks to list.
	Hooks []github.Hook
	// DryRun lists what would be redelivered without asking for it.
	DryRun bool
	// Now is the clock; default time.Now.
	Now func() time.Time
}

// DefaultSince is Config.Since's default.
const DefaultSince = 6 * time.Hour

// MaxSince is as far back as GitHub keeps deliveries.
const MaxSince = 72 * time.Hour

func (c *Config) setDefaults() {
	if c.Since == 0 {
		c.Since = DefaultSince
	}
	if c.Now == nil {
		c.Now = time.Now
	}
}

// Validate reports a lookback out of range or nothing to list.
func (c Config) Validate() error {
	c.setDefaults()
	var errs []error
	if c.Since < 0 || c.Since > MaxSince {
		errs = append(errs, fmt.Errorf("checking recover since: %v is outside 0..%v (GitHub keeps deliveries for 3 days)", c.Since, MaxSince))
	}
	if !c.App && len(c.Hooks) == 0 {
		errs = append(errs, errors.New("checking recover: no webhook to list: configure a github app (app_id) or github.recover.hooks"))
	}
	for _, h := range c.Hooks {
		if h.Repo == "" || h.ID <= 0 {
			errs = append(errs, fmt.Errorf("checking recover hooks: %q id %d: want repo owner/name and the webhook's id", h.Repo, h.ID))
		}
	}
	return errors.Join(errs...)
}

// What became of one failed delivery.
const (
	Redelivered     = "redelivered"
	WouldRedeliver  = "would redeliver" // DryRun
	AlreadyStored   = "stored"          // hookrun has it: nothing to do
	Permanent       = "refused"         // answered 400 or 413: the same body would be refused again
	RedeliverFailed = "failed"
)

// Outcome is one failed delivery and what Run did about it.
type Outcome struct {
	GUID       string
	Event      string
	Hook       github.Hook
	StatusCode int // of its latest attempt
	At         time.Time
	Did        string
	Err        error
}

// Report is what Run found.
type Report struct {
	Listed   int       // delivery attempts listed
	Failed   []Outcome // deliveries none of whose attempts succeeded, newest first
	Unstored bool      // no Store: stored deliveries were asked for again (ingress deduplicates them)
}

// Run lists the deliveries of every configured webhook since cfg.Since and
// asks GitHub to deliver again each one whose every attempt failed, unless
// store says hookrun has it (a delivery answered late, after it was
// persisted) or its answer was a refusal of the body itself (400, 413).
// store may be nil. The error joins the webhooks that could not be listed;
// a redelivery that fails is an Outcome.
func Run(ctx context.Context, l Lister, store Store, cfg Config) (Report, error) {
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		return Report{}, err
	}
	since := cfg.Now().Add(-cfg.Since)
	var hooks []*github.Hook
	if cfg.App {
		hooks = append(hooks, nil)
	}
	for i := range cfg.Hooks {
		hooks = append(hooks, &cfg.Hooks[i])
	}
	rep := Report{Unstored: store == nil}
	var errs []error
	for _, h := range hooks {
		ds, err := l.HookDeliveries(ctx, h, since)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		rep.Listed += len(ds)
		for _, d := range failed(ds) {
			o := Outcome{GUID: d.GUID, Event: d.Event, Hook: d.Hook, StatusCode: d.StatusCode, At: d.DeliveredAt}
			o.Did, o.Err = decide(ctx, l, store, d, cfg.DryRun)
			rep.Failed = append(rep.Failed, o)
		}
	}
	return rep, errors.Join(errs...)
}

// failed returns, per GUID, the latest attempt of each delivery none of
// whose attempts succeeded (ds is newest first).
func failed(ds []github.HookDelivery) []github.HookDelivery {
	ok := map[string]bool{}
	for _, d := range ds {
		if d.OK() {
			ok[d.GUID] = true
		}
	}
	var out []github.HookDelivery
	seen := map[string]bool{}
	for _, d := range ds {
		if ok[d.GUID] || seen[d.GUID] || d.GUID == "" {
			continue
		}
		seen[d.GUID] = true
		out = append(out, d)
	}
	return out
}

func decide(ctx context.Context, l Lister, store Store, d github.HookDelivery, dry bool) (string, error) {
	if d.StatusCode == http.StatusBadRequest || d.StatusCode == http.StatusRequestEntityTooLarge {
		return Permanent, nil
	}
	if store != nil {
		seen, err := store.DeliverySeen(ctx, github.Name, d.GUID)
		if err != nil {
			return RedeliverFailed, fmt.Errorf("checking whether delivery %s is stored: %w", d.GUID, err)
		}
		if seen {
			return AlreadyStored, nil
		}
	}
	if dry {
		return WouldRedeliver, nil
	}
	if err := l.Redeliver(ctx, d); err != nil {
		return RedeliverFailed, err
	}
	return Redelivered, nil
}
