package main

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/spf13/cobra"
)

// newSessionsCommand is `hookrun sessions revoke --all`.
func newSessionsCommand() *cobra.Command {
	var f clientFlags
	c := &cobra.Command{
		Use:   "sessions",
		Short: "end the web UI's login sessions through the API",
		RunE:  groupRunE,
	}
	f.register(c)
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
			cl, err := f.client()
			if err != nil {
				return err
			}
			var ans struct {
				Revoked int `json:"revoked"`
			}
			raw, err := cl.callJSON(c.Context(), http.MethodPost, "/api/v1/sessions/revoke", &ans)
			if err != nil {
				return err
			}
			if f.json {
				return printJSON(c.OutOrStdout(), raw)
			}
			fmt.Fprintf(c.OutOrStdout(), "revoked %d session(s)\n", ans.Revoked)
			return nil
		},
	}
	revoke.Flags().BoolVar(&all, "all", false, "end every session (required)")
	c.AddCommand(revoke)
	return c
}
