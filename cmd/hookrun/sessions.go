package main

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/spf13/cobra"
)

// newSessionsCommand is `hookrun sessions revoke --all`.
func newSessionsCommand() *cobra.Command {
	f, c := clientGroup("sessions", "end the web UI's login sessions through the API")
	var all bool
	revoke := &cobra.Command{
		Use:   "revoke --all",
		Short: "end every web UI session now (the API token stays as it is)",
		Long: "End every web UI login session now, on every ingress replica: each browser must log in\n" +
			"again with the API token, which does not change (POST /api/v1/sessions/revoke).\n" +
			"One's own session ends with the UI's Log out button.",
		Args: exactArgs(0, "no arguments"),
		RunE: func(c *cobra.Command, _ []string) error {
			if !all {
				return usageError{errors.New("want --all: every session ends (one's own ends with the UI's Log out)")}
			}
			return answer(f, c, http.MethodPost, "/api/v1/sessions/revoke", func(ans *struct {
				Revoked int `json:"revoked"`
			}) error {
				fmt.Fprintf(c.OutOrStdout(), "revoked %d session(s)\n", ans.Revoked)
				return nil
			})
		},
	}
	revoke.Flags().BoolVar(&all, "all", false, "end every session (required)")
	c.AddCommand(revoke)
	return c
}
