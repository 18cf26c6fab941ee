package main

import (
	"fmt"
	"log/slog"
	"os"

	"github.com/hookrun/hookrun/ingress"
	"github.com/hookrun/hookrun/providers/github"
	"github.com/hookrun/hookrun/providers/gitlab"
)

// trustLookups gives ingress the forge API clients it asks what a payload
// does not say (issue 13): GitHub's current head of a pull request, for a
// comment whose pull request sent no pull_request event yet; GitLab's merge
// request head and its members' roles. A forge without API credentials
// gets none: comments there whose head was not remembered are refused, and
// GitLab events stay NONE. The clients are the reporters' types, built from
// the same github and gitlab sections; nothing is requested until needed.
// hookrun_heads comes with the queue (ingress takes it from the publisher).
func trustLookups(cfg *Config, logger *slog.Logger) (ingress.TrustConfig, error) {
	var t ingress.TrustConfig
	if cfg.GitHub.Token != "" || cfg.GitHub.AppID != 0 {
		gc := github.Config{APIURL: cfg.GitHub.APIURL, Token: cfg.GitHub.Token, AppID: cfg.GitHub.AppID, Logger: logger}
		if cfg.GitHub.PrivateKeyFile != "" {
			key, err := os.ReadFile(cfg.GitHub.PrivateKeyFile)
			if err != nil {
				return t, fmt.Errorf("github.private_key_file: reading: %w", err)
			}
			gc.PrivateKey = key
		}
		gh, err := github.New(gc)
		if err != nil {
			return t, fmt.Errorf("configuring github lookups: %w", err)
		}
		t.GitHubHeads = gh
	}
	if cfg.GitLab.Token != "" {
		gl, err := gitlab.New(gitlab.Config{BaseURL: cfg.GitLab.BaseURL, Token: cfg.GitLab.Token, Logger: logger})
		if err != nil {
			return t, fmt.Errorf("configuring gitlab lookups: %w", err)
		}
		t.GitLabHeads, t.GitLabMembers = gl, gl
	}
	return t, nil
}
