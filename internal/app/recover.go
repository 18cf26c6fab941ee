package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/hookrun/hookrun/providers/github"
	"github.com/hookrun/hookrun/providers/github/recovery"
	"github.com/hookrun/hookrun/queue"
)

// RecoverConfig is github.recover as recovery.Config: the App's webhook
// when app_id is set, the listed repository webhooks, the lookback.
func (c *Config) RecoverConfig(dryRun bool) recovery.Config {
	rc := recovery.Config{App: c.GitHub.AppID != 0, Since: c.GitHub.Recover.Since, DryRun: dryRun}
	for _, h := range c.GitHub.Recover.Hooks {
		rc.Hooks = append(rc.Hooks, github.Hook{Repo: h.Repo, ID: h.ID})
	}
	return rc
}

// startRecovery looks for failed GitHub deliveries every
// github.recover.interval (off when 0), until ctx ends.
func (a *App) startRecovery(ctx context.Context, forges *Forges) {
	every := a.cfg.GitHub.Recover.Interval
	if every <= 0 || forges.GitHub == nil {
		return
	}
	cfg := a.cfg.RecoverConfig(false)
	go func() {
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			recoverOnce(ctx, forges.GitHub, a.queue, cfg, a.logger)
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
}

// recoverOnce runs one recovery and logs what it did.
func recoverOnce(ctx context.Context, l recovery.Lister, store recovery.Store, cfg recovery.Config, log *slog.Logger) {
	rep, err := recovery.Run(ctx, l, store, cfg)
	if err != nil && ctx.Err() == nil {
		log.Warn("looking for failed webhook deliveries", "err", err)
	}
	for _, o := range rep.Failed {
		switch o.Did {
		case recovery.Redelivered:
			log.Info("asked GitHub to redeliver a failed delivery", "delivery", o.GUID, "event", o.Event, "hook", o.Hook.String(), "status_code", o.StatusCode)
		case recovery.RedeliverFailed:
			log.Warn("asking GitHub to redeliver a failed delivery", "delivery", o.GUID, "hook", o.Hook.String(), "err", o.Err)
		}
	}
}

// Recover is `hookrun recover`: one look for failed GitHub deliveries with
// cfg's credentials. With an external NATS (nats.url) it skips what
// hookrun stored; with the embedded server (whose store a running serve
// holds) it asks for every failed delivery again, which ingress
// deduplicates (Report.Unstored).
func Recover(ctx context.Context, cfg *Config, since time.Duration, dryRun bool, logger *slog.Logger) (recovery.Report, error) {
	forges, err := NewForges(cfg, logger)
	if err != nil {
		return recovery.Report{}, err
	}
	if forges.GitHub == nil {
		return recovery.Report{}, errors.New("recovering deliveries: no github token or app_id is configured")
	}
	rc := cfg.RecoverConfig(dryRun)
	if since != 0 {
		rc.Since = since
	}
	var store recovery.Store
	if cfg.NATS.URL != "" {
		q, err := queue.Open(ctx, queue.Config{URL: cfg.NATS.URL, CredsFile: cfg.NATS.CredsFile, CAFile: cfg.NATS.CAFile,
			CertFile: cfg.NATS.CertFile, KeyFile: cfg.NATS.KeyFile, Replicas: cfg.NATS.Replicas, Logger: logger,
			User: cfg.NATS.User, Password: cfg.NATS.Password, PasswordFile: cfg.NATS.PasswordFile})
		if err != nil {
			return recovery.Report{}, fmt.Errorf("recovering deliveries: opening queue: %w", err)
		}
		defer q.Close()
		store = q
	}
	return recovery.Run(ctx, forges.GitHub, store, rc)
}
