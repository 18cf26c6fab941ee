package slack

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/hookrun/hookrun/providers/internal/render"
	"github.com/hookrun/hookrun/runner/contract"
	"github.com/hookrun/hookrun/workflows"
)

// Response types of a message to a response_url.
const (
	InChannel = "in_channel" // everyone in the channel sees the result
	Ephemeral = "ephemeral"  // only whoever typed the command does
)

// bodyLimit bounds the report body in a message: Slack cuts a message's
// text past 40,000 characters and folds long ones; a result is a summary.
const bodyLimit = 3000

// Config configures the Reporter.
type Config struct {
	// ResponseURLPrefix is the only place results are posted to; default
	// workflows.DefaultResponseURLPrefix (https://hooks.slack.com/).
	ResponseURLPrefix string
	// ResponseType is InChannel (default) or Ephemeral.
	ResponseType string
	// RunURL links a run from the message; "{run}" is replaced by its id;
	// empty: no link.
	RunURL string
	// Client posts the messages; default a client with a 10 s timeout
	// that follows no redirect (a redirect could leave the prefix).
	Client *http.Client
	// Logger; default discards.
	Logger *slog.Logger
}

func (c *Config) setDefaults() {
	c.ResponseURLPrefix = cmp.Or(c.ResponseURLPrefix, workflows.DefaultResponseURLPrefix)
	c.ResponseType = cmp.Or(c.ResponseType, InChannel)
	c.Client = cmp.Or(c.Client, &http.Client{Timeout: 10 * time.Second})
	c.Logger = cmp.Or(c.Logger, slog.New(slog.DiscardHandler))
}

// WithDefaults is c with its defaults filled in (internal/app compares).
func (c Config) WithDefaults() Config { c.setDefaults(); return c }

// Validate reports every problem of c, defaults applied.
func (c Config) Validate() error {
	c.setDefaults()
	var errs []error
	if err := workflows.CheckResponseURLPrefix(c.ResponseURLPrefix); err != nil {
		errs = append(errs, err)
	}
	if c.ResponseType != InChannel && c.ResponseType != Ephemeral {
		errs = append(errs, fmt.Errorf("checking slack response type %q: want %s or %s", c.ResponseType, InChannel, Ephemeral))
	}
	return errors.Join(errs...)
}

// Reporter posts chat runs' results to their response_url. It is safe for
// concurrent use.
type Reporter struct {
	cfg    Config
	client *http.Client
}

// New checks cfg and returns a Reporter.
func New(cfg Config) (*Reporter, error) {
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	client := *cfg.Client
	client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return &Reporter{cfg: cfg, client: &client}, nil
}

// Handles reports whether r is a report this reporter takes: one of an
// event with a Slack Chat.
func Handles(r *contract.RunReport) bool {
	return r != nil && r.Event != nil && r.Event.Chat != nil && r.Event.Chat.Platform == workflows.ChatSlack
}

// Applies is Handles: a reporter that decides itself whether a report is
// its to send (prow crier's ShouldReport).
func (r *Reporter) Applies(rep *contract.RunReport) bool { return Handles(rep) }

// message is what a response_url takes.
type message struct {
	ResponseType    string `json:"response_type"`
	Text            string `json:"text"`
	ReplaceOriginal bool   `json:"replace_original"`
}

// Report implements contract.Reporter: the final report is posted, the
// others dropped. A response_url outside the prefix, or one Slack refuses
// (expired, 4xx), is an error matching contract.ErrRefused; a 429 with
// Retry-After is a contract.RetryAfterError; other failures are plain
// errors the outbox retries.
func (r *Reporter) Report(ctx context.Context, rep *contract.RunReport) (contract.ReportRef, error) {
	ref := rep.Ref
	if !Handles(rep) || rep.Workflow == nil {
		return ref, fmt.Errorf("reporting run %s to slack: not a slack chat run", rep.RunID)
	}
	if rep.Phase != contract.PhaseFinal {
		return ref, nil
	}
	if err := workflows.ResponseURLAllowed(r.cfg.ResponseURLPrefix, rep.Event.Chat.ResponseURL); err != nil {
		return ref, contract.Refuse(fmt.Errorf("reporting run %s to slack: %w", rep.RunID, err))
	}
	body, err := json.Marshal(message{ResponseType: r.cfg.ResponseType, Text: Text(rep, r.cfg.RunURL)})
	if err != nil {
		return ref, fmt.Errorf("reporting run %s to slack: encoding: %w", rep.RunID, err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, rep.Event.Chat.ResponseURL, bytes.NewReader(body))
	if err != nil {
		return ref, contract.Refuse(fmt.Errorf("reporting run %s to slack: building the request: %w", rep.RunID, err))
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := r.client.Do(req)
	if err != nil {
		// the URL is a capability: keep it out of the error
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return ref, fmt.Errorf("reporting run %s to slack: posting to the response URL: %w", rep.RunID, err)
	}
	defer resp.Body.Close()
	answer, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	switch code := resp.StatusCode; {
	case code >= 200 && code < 300:
		r.cfg.Logger.Debug("run result posted to slack", "run", rep.RunID)
		return ref, nil
	case code == http.StatusTooManyRequests:
		err := fmt.Errorf("reporting run %s to slack: rate limited (429)", rep.RunID)
		if s, perr := strconv.Atoi(resp.Header.Get("Retry-After")); perr == nil && s >= 0 {
			return ref, &contract.RetryAfterError{After: time.Duration(s) * time.Second, Err: err}
		}
		return ref, err
	case code >= 500:
		return ref, fmt.Errorf("reporting run %s to slack: %d %s", rep.RunID, code, oneLine(answer))
	default: // expired (404, 410), used up, malformed: trying again cannot help
		return ref, contract.Refuse(fmt.Errorf("reporting run %s to slack: refused with %d %s", rep.RunID, code, oneLine(answer)))
	}
}

// Text is the message of a final report: the workflow, its outcome and
// run id (render.Description), the repository, who asked, a link to the
// run, report.body (cut to bodyLimit) and the actions refused (a chat
// run acts on no forge: its actions are all refused). Everything but the
// link is escaped: outputs and names are untrusted text, and must not
// turn into mentions (<!channel>) or links.
func Text(rep *contract.RunReport, runURL string) string {
	ev := rep.Event
	head := fmt.Sprintf("%s %s: %s on %s", icon(rep.Status), rep.Workflow.Name, render.Description(rep, 500), ev.Repo)
	if c := ev.Chat; c != nil && c.Text != "" {
		head += " (" + c.Command + " " + c.Text + ")"
	}
	var b strings.Builder
	b.WriteString(escape(head))
	if u := render.RunURL(runURL, rep.RunID); u != "" && !strings.ContainsAny(u, "<>|") {
		b.WriteString(" <" + u + "|details>")
	}
	if body := strings.TrimSpace(rep.Body); body != "" {
		if utf8.RuneCountInString(body) > bodyLimit {
			body = string([]rune(body)[:bodyLimit]) + " … (cut)"
		}
		b.WriteString("\n" + escape(body))
	}
	b.WriteString(refused(rep.Acted))
	return b.String()
}

// maxRefusedLines bounds the refused actions a message lists.
const maxRefusedLines = 3

// refused lists the actions (actions.json) refused, with the reason, each
// on a line of its own (escaped: a step wrote them); "" when none.
func refused(o *contract.ActionsOutcome) string {
	if o == nil || len(o.Refused) == 0 {
		return ""
	}
	var b strings.Builder
	for i, n := range o.Refused {
		if i == maxRefusedLines {
			fmt.Fprintf(&b, "\n… and %d more refused actions (see the run record)", len(o.Refused)-i)
			break
		}
		line := "Refused: " + n.What + ": " + n.Reason
		if utf8.RuneCountInString(line) > 300 {
			line = string([]rune(line)[:300]) + " …"
		}
		b.WriteString("\n" + escape(strings.Join(strings.Fields(line), " ")))
	}
	return b.String()
}

func icon(s workflows.Status) string { return s.Present().Slack }

// escape escapes Slack's three control characters.
func escape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}

func oneLine(b []byte) string {
	s := strings.Join(strings.Fields(string(b)), " ")
	if len(s) > 200 {
		s = s[:200]
	}
	return s
}

var _ contract.Reporter = (*Reporter)(nil)
