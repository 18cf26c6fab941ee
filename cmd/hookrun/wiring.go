package main

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/hookrun/hookrun/ingress"
	"github.com/hookrun/hookrun/providers/github"
	"github.com/hookrun/hookrun/providers/gitlab"
	"github.com/hookrun/hookrun/queue"
	"github.com/hookrun/hookrun/runner"
	"github.com/hookrun/hookrun/runner/contract"
	"github.com/hookrun/hookrun/workflows"
)

// forgeReporters sends each run's report to the reporter of its event's forge.
type forgeReporters map[workflows.Forge]contract.Reporter

func (f forgeReporters) Report(ctx context.Context, r *contract.RunReport) (contract.ReportRef, error) {
	rep, ok := f[r.Event.Forge]
	if !ok {
		return r.Ref, nil // no credentials for this forge: nothing to report to
	}
	return rep.Report(ctx, r)
}

func newReporter(cfg *Config, logger *slog.Logger) (forgeReporters, error) {
	reps := forgeReporters{}
	if cfg.GitHub.Token != "" || cfg.GitHub.AppID != 0 {
		gc := github.Config{APIURL: cfg.GitHub.APIURL, Token: cfg.GitHub.Token, AppID: cfg.GitHub.AppID, RunURL: cfg.RunURL, Logger: logger}
		if cfg.GitHub.PrivateKeyFile != "" {
			key, err := os.ReadFile(cfg.GitHub.PrivateKeyFile)
			if err != nil {
				return nil, fmt.Errorf("github.private_key_file: reading: %w", err)
			}
			gc.PrivateKey = key
		}
		rep, err := github.New(gc)
		if err != nil {
			return nil, fmt.Errorf("configuring github reporter: %w", err)
		}
		reps[workflows.GitHub] = rep
	}
	if cfg.GitLab.Token != "" {
		rep, err := gitlab.New(gitlab.Config{BaseURL: cfg.GitLab.BaseURL, Token: cfg.GitLab.Token, RunURL: cfg.RunURL, Logger: logger})
		if err != nil {
			return nil, fmt.Errorf("configuring gitlab reporter: %w", err)
		}
		reps[workflows.GitLab] = rep
	}
	if len(reps) == 0 {
		logger.Warn("no forge token configured: runs are not reported on pull requests")
	}
	return reps, nil
}

// recordCanceller cancels through the run record alone (for `hookrun
// ingress`, which runs no runner): the claimant sees CancelRequested.
type recordCanceller struct{ runs *queue.RunStore }

func (c recordCanceller) Cancel(ctx context.Context, id string) error {
	_, err := c.runs.RequestCancel(ctx, id)
	return err
}

func registerAPI(srv *ingress.Server, cfg *Config, q *queue.Queue, r *runner.Runner, _ *slog.Logger) {
	var c ingress.Canceller = recordCanceller{q.Runs()}
	if r != nil {
		c = r
	}
	srv.RegisterAPI(ingress.APIConfig{Token: cfg.API.Token}, q.Runs(), q.Logs(), c)
}

// printDevCurl prints a ready curl command that posts a GitHub
// pull_request payload signed with the first configured secret.
func printDevCurl(w io.Writer, baseURL, payloadPath string, secrets []string) error {
	if len(secrets) == 0 {
		return errors.New("--dev-curl needs github.webhook_secret")
	}
	body, err := os.ReadFile(payloadPath)
	if err != nil {
		return fmt.Errorf("reading --dev-curl payload: %w", err)
	}
	mac := hmac.New(sha256.New, []byte(secrets[0]))
	mac.Write(body)
	sig := "sha256=" + hex.EncodeToString(mac.Sum(nil))
	abs, _ := filepath.Abs(payloadPath)
	delivery := "dev-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	fmt.Fprintf(w, "\nhookrun is up. Webhook URL: %s/hooks/github\n\nTry it (triggers examples/hello.yaml):\n\n", baseURL)
	fmt.Fprintf(w, "  curl -sS -X POST %s/hooks/github \\\n    -H 'Content-Type: application/json' \\\n    -H 'X-GitHub-Event: pull_request' \\\n    -H 'X-GitHub-Delivery: %s' \\\n    -H 'X-Hub-Signature-256: %s' \\\n    --data-binary @%s\n\n",
		baseURL, delivery, sig, abs)
	return nil
}
