package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
)

// Defaults and environment of the API client commands.
const (
	defaultServer = "http://127.0.0.1:8080"
	envServer     = "HOOKRUN_SERVER"
	envToken      = "HOOKRUN_API_TOKEN"
)

// clientFlags are the flags every API client command has.
type clientFlags struct {
	server    string
	tokenFile string
	json      bool
}

// register adds the flags to a command group (persistent: its
// subcommands have them too). --server defaults to $HOOKRUN_SERVER.
func (f *clientFlags) register(c *cobra.Command) {
	def := os.Getenv(envServer)
	if def == "" {
		def = defaultServer
	}
	c.PersistentFlags().StringVar(&f.server, "server", def, "base URL of the hookrun server (env "+envServer+")")
	c.PersistentFlags().StringVar(&f.tokenFile, "token-file", "", "file holding the API token (default: env "+envToken+")")
	c.PersistentFlags().BoolVar(&f.json, "json", false, "print the API's JSON answer instead of a table")
}

// clientGroup is the command group use of the API client (runs,
// deliveries, sessions) and its flags, on every subcommand; groupRunE
// when none is named.
func clientGroup(use, short string) (*clientFlags, *cobra.Command) {
	f := &clientFlags{}
	c := &cobra.Command{Use: use, Short: short, RunE: groupRunE}
	f.register(c)
	return f, c
}

// callJSON asks the API with the client f configures (apiClient.callJSON).
func (f *clientFlags) callJSON(ctx context.Context, method, path string, v any) (raw []byte, _ error) {
	cl, err := f.client()
	if err != nil {
		return nil, err
	}
	return cl.callJSON(ctx, method, path, v)
}

// answer asks the API (method on path) and prints its answer on c's
// output: as it came with --json, else through human.
func answer[T any](f *clientFlags, c *cobra.Command, method, path string, human func(*T) error) error {
	var ans T
	raw, err := f.callJSON(c.Context(), method, path, &ans)
	if err != nil {
		return err
	}
	if f.json {
		return printJSON(c.OutOrStdout(), raw)
	}
	return human(&ans)
}

// client builds the API client of the flags. The token is read from
// --token-file or $HOOKRUN_API_TOKEN, never taken from a flag value.
func (f *clientFlags) client() (*apiClient, error) {
	token := os.Getenv(envToken)
	if f.tokenFile != "" {
		data, err := os.ReadFile(f.tokenFile)
		if err != nil {
			return nil, usageError{fmt.Errorf("reading --token-file: %w", err)}
		}
		token = strings.TrimSpace(string(data))
	}
	u, err := url.Parse(f.server)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, usageError{fmt.Errorf("--server %q is not an http(s) URL", f.server)}
	}
	return &apiClient{base: strings.TrimRight(f.server, "/"), token: token, http: &http.Client{}}, nil
}

// apiClient talks to /api/v1 with the bearer token.
type apiClient struct {
	base  string
	token string
	http  *http.Client
}

// apiError is an HTTP error answer of the API.
type apiError struct {
	method, path string
	code         int
	msg          string
}

func (e *apiError) Error() string {
	if e.code == http.StatusUnauthorized {
		return fmt.Sprintf("%s %s: 401 unauthorized: check %s (or --token-file)", e.method, e.path, envToken)
	}
	return fmt.Sprintf("%s %s: %d %s: %s", e.method, e.path, e.code, strings.ToLower(http.StatusText(e.code)), e.msg)
}

// request sends one request and returns the response of a 2xx answer;
// any other answer is an *apiError with the server's message.
func (c *apiClient) request(ctx context.Context, method, path string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, nil)
	if err != nil {
		return nil, fmt.Errorf("building request: %w", err)
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("connecting to %s: %w (is hookrun serve running there? set --server or %s)", c.base, errors.Unwrap(err), envServer)
	}
	if resp.StatusCode/100 == 2 {
		return resp, nil
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	var body struct {
		Error string `json:"error"`
	}
	msg := strings.TrimSpace(string(data))
	if json.Unmarshal(data, &body) == nil && body.Error != "" {
		msg = body.Error
	}
	return nil, &apiError{method: method, path: strings.SplitN(path, "?", 2)[0], code: resp.StatusCode, msg: msg}
}

// call sends a request and returns the answer's body.
func (c *apiClient) call(ctx context.Context, method, path string) ([]byte, error) {
	resp, err := c.request(ctx, method, path)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("reading the answer to %s %s: %w", method, path, err)
	}
	return data, nil
}

// callJSON sends a request and decodes the answer into v; raw is the
// answer as received (for --json).
func (c *apiClient) callJSON(ctx context.Context, method, path string, v any) (raw []byte, _ error) {
	data, err := c.call(ctx, method, path)
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(data, v); err != nil {
		return nil, fmt.Errorf("decoding the answer to %s %s: %w", method, path, err)
	}
	return data, nil
}

// sseEvent is one Server-Sent Event.
type sseEvent struct {
	name string
	data string
}

// follow reads the Server-Sent Events of GET path (logs ?follow=1) and
// hands each to fn until the stream ends or fn returns false.
func (c *apiClient) follow(ctx context.Context, path string, fn func(sseEvent) bool) error {
	resp, err := c.request(ctx, http.MethodGet, path)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	var ev sseEvent
	var data bytes.Buffer
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if ev.name != "" || data.Len() > 0 {
				ev.data = data.String()
				if !fn(ev) {
					return nil
				}
			}
			ev, data = sseEvent{}, bytes.Buffer{}
		case strings.HasPrefix(line, "event:"):
			ev.name = strings.TrimSpace(strings.TrimPrefix(line, "event:"))
		case strings.HasPrefix(line, "data:"):
			if data.Len() > 0 {
				data.WriteByte('\n')
			}
			data.WriteString(strings.TrimPrefix(strings.TrimPrefix(line, "data:"), " "))
		}
	}
	if err := sc.Err(); err != nil && ctx.Err() == nil {
		return fmt.Errorf("reading the log stream: %w", err)
	}
	return nil
}

// printJSON writes an API answer indented.
func printJSON(w io.Writer, raw []byte) error {
	var b bytes.Buffer
	if err := json.Indent(&b, raw, "", "  "); err != nil {
		_, err = w.Write(raw)
		return err
	}
	b.WriteByte('\n')
	_, err := w.Write(b.Bytes())
	return err
}

// ago is a compact age for tables.
func ago(t time.Time, now time.Time) string {
	if t.IsZero() {
		return "-"
	}
	d := now.Sub(t).Round(time.Second)
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds ago", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm ago", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh ago", int(d.Hours()))
	default:
		return t.Format("2006-01-02")
	}
}
