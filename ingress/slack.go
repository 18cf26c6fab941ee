package ingress

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/hookrun/hookrun/providers/forge"
	"github.com/hookrun/hookrun/workflows"
)

// Slack slash commands: POST /hooks/slack.
//
// A request is verified first (verifySlack: Slack's v0 signature over
// "v0:" + X-Slack-Request-Timestamp + ":" + body with one of the signing
// secrets, in constant time, the timestamp within SlackReplayWindow of
// now); anything else is 401 with nothing said about why. The form body
// (command, text, user_id, channel_id, team_id, response_url, trigger_id,
// ...) becomes an Event of kind chat (normalizeSlack). Each workflow's chat
// triggers are matched against its text, the run's event is given the
// matching trigger's repository (Forge, Repo, CloneURL from
// SlackConfig.Origins), the repository must be in allow_repos, and the
// workflow's Slack allowlists must let the user and channel through. The
// runs are published (at most AckTimeout), and the answer, always 200
// when verified (Slack shows anything else as a bare error), is an
// ephemeral message saying which runs were queued or why none was. The
// final result reaches the command's response_url from the runner
// (providers/slack), and only when it is under ResponseURLPrefix: a
// command whose response_url is not runs nothing.

// Slack's header names.
const (
	headerSlackTimestamp = "X-Slack-Request-Timestamp"
	headerSlackSignature = "X-Slack-Signature"
)

// slackLabel is the forge label of Slack commands in the metrics.
const slackLabel workflows.Forge = "slack"

// slackAnswer is the body of an answer to a slash command: a message only
// its sender sees.
type slackAnswer struct {
	ResponseType string   `json:"response_type"` // ephemeral
	Text         string   `json:"text"`
	Delivery     string   `json:"delivery,omitempty"` // for logs and tests; Slack ignores it
	Runs         []runRef `json:"runs,omitempty"`
}

// verifySlack checks a request's v0 signature and timestamp. Every secret
// is tried, so the time taken does not depend on which one matched.
func verifySlack(secrets [][]byte, timestamp, signature string, body []byte, now time.Time) bool {
	ts, err := strconv.ParseInt(timestamp, 10, 64)
	if err != nil {
		return false
	}
	if d := now.Sub(time.Unix(ts, 0)); d > SlackReplayWindow || d < -SlackReplayWindow {
		return false
	}
	hexSig, ok := strings.CutPrefix(signature, "v0=")
	if !ok {
		return false
	}
	return forge.VerifyHMAC(secrets, hexSig, []byte("v0:"+timestamp+":"), body)
}

// normalizeSlack turns a verified slash command's form body into a chat
// event; its Forge, Repo and CloneURL stay empty until a trigger names
// them. The delivery key is the team and trigger_id (one per invocation),
// else the body's digest.
func normalizeSlack(body []byte) (*workflows.Event, error) {
	form, err := url.ParseQuery(string(body))
	if err != nil {
		return nil, fmt.Errorf("parsing slack command: %w: %w", ErrMalformedPayload, err)
	}
	c := &workflows.Chat{
		Platform:    workflows.ChatSlack,
		TeamID:      form.Get("team_id"),
		UserID:      form.Get("user_id"),
		UserName:    form.Get("user_name"),
		ChannelID:   form.Get("channel_id"),
		ChannelName: form.Get("channel_name"),
		Command:     form.Get("command"),
		Text:        strings.TrimSpace(form.Get("text")),
		ResponseURL: form.Get("response_url"),
		TriggerID:   form.Get("trigger_id"),
	}
	for name, v := range map[string]string{"command": c.Command, "user_id": c.UserID, "channel_id": c.ChannelID, "response_url": c.ResponseURL} {
		if v == "" {
			return nil, fmt.Errorf("parsing slack command: %w: no %s", ErrMalformedPayload, name)
		}
	}
	delivery := "slack-" + c.TeamID + "-" + c.TriggerID
	if c.TriggerID == "" {
		sum := sha256.Sum256(body)
		delivery = "slack-sha256-" + hex.EncodeToString(sum[:])
	}
	return &workflows.Event{Kind: workflows.KindChat, Action: "command", DeliveryID: delivery,
		Sender: c.UserName, Chat: c}, nil
}

func (s *Server) handleSlack(c echo.Context) error {
	if !s.cfg.Slack.Enabled {
		return c.JSON(http.StatusNotFound, errorBody{"not found"})
	}
	req := c.Request()
	body, tooLarge, err := s.readBody(c, s.cfg.Slack.MaxBodyBytes)
	switch {
	case tooLarge:
		s.count(slackLabel, "", outcomeTooLarge)
		return c.JSON(http.StatusRequestEntityTooLarge, errTooLarge)
	case err != nil:
		s.count(slackLabel, "", outcomeMalformed)
		return c.JSON(http.StatusBadRequest, errorBody{"reading body failed"})
	}
	defer putBody(body)
	if !verifySlack(s.slackSecrets, req.Header.Get(headerSlackTimestamp), req.Header.Get(headerSlackSignature), body, s.now()) {
		s.logger.Debug("slack command refused: signature or timestamp check failed", "remote", c.RealIP())
		s.count(slackLabel, "", outcomeUnauthorized)
		return c.JSON(http.StatusUnauthorized, errUnauthorized)
	}
	ev, err := normalizeSlack(body)
	if err != nil {
		s.logger.Debug("slack command refused: malformed", "err", err)
		s.count(slackLabel, "", outcomeMalformed)
		return c.JSON(http.StatusBadRequest, errorBody{"malformed payload"})
	}
	ch := ev.Chat
	answer := func(text string) error {
		return c.JSON(http.StatusOK, slackAnswer{ResponseType: "ephemeral", Text: text, Delivery: ev.DeliveryID})
	}
	log := s.logger.With("delivery", ev.DeliveryID, "user", ch.UserID, "channel", ch.ChannelID)
	if ch.Command != s.cfg.Slack.Command {
		s.count(slackLabel, "", outcomeUnhandled)
		return answer("hookrun answers " + s.cfg.Slack.Command + ", not " + slackEscape(ch.Command) + ".")
	}
	if err := workflows.ResponseURLAllowed(s.cfg.Slack.ResponseURLPrefix, ch.ResponseURL); err != nil {
		log.Warn("slack command refused: its response_url is not Slack's", "err", err)
		s.count(slackLabel, "", outcomeMalformed)
		return answer("hookrun runs nothing for this command: its response URL is not under " + s.cfg.Slack.ResponseURLPrefix + ".")
	}
	word, _, _ := strings.Cut(ch.Text, " ")
	if word == "" || word == "help" {
		s.count(slackLabel, "", outcomeNoRun)
		return answer(s.slackHelp())
	}

	dec := s.dec.Chat(ev)
	reqs := dec.Runs
	if len(reqs) == 0 {
		s.count(slackLabel, "", outcomeNoRun)
		log.Info("slack command accepted without runs", "skipped", len(dec.Skipped))
		return answer(slackNothing(ch, dec.Skips()))
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(req.Context()), s.cfg.Slack.AckTimeout)
	defer cancel()
	results, err := s.persist.publishAll(ctx, reqs)
	if err != nil {
		log.Error("publishing runs of a slack command", "err", err)
		s.count(slackLabel, "", outcomeUnavailable)
		return answer("hookrun could not queue `" + slackEscape(ch.Command+" "+ch.Text) + "` (queue unavailable); nothing runs. Try again.")
	}
	a := slackAnswer{ResponseType: "ephemeral", Delivery: ev.DeliveryID}
	var lines []string
	for i, r := range results {
		a.Runs = append(a.Runs, runRef{ID: r.RunID, Workflow: reqs[i].Workflow})
		lines = append(lines, fmt.Sprintf("Queued run %s of %s on %s.", r.RunID, reqs[i].Workflow, slackEscape(reqs[i].Event.Repo)))
		if !r.Duplicate {
			s.metrics.runs.WithLabelValues(string(slackLabel), reqs[i].Workflow).Inc()
		}
	}
	a.Text = strings.Join(lines, "\n") + " The result follows here."
	s.count(slackLabel, "", outcomeAccepted)
	log.Info("slack command accepted", "runs", len(a.Runs))
	return c.JSON(http.StatusOK, a)
}

// slackHelp lists the chat commands the loaded workflows take.
func (s *Server) slackHelp() string {
	var words []string
	for _, w := range s.src.Workflows() {
		for _, t := range w.On {
			if t.Event == workflows.KindChat && !slices.Contains(words, t.Command) {
				words = append(words, t.Command)
			}
		}
	}
	if len(words) == 0 {
		return "No workflow takes " + s.cfg.Slack.Command + " commands."
	}
	slices.Sort(words)
	return "Usage: " + s.cfg.Slack.Command + " <command> [arguments]. Commands: " + strings.Join(words, ", ") + "."
}

// slackNothing says why a command runs nothing: skips are the skipped
// workflows and why (decide.Decision.Skips), "" when none listens.
func slackNothing(c *workflows.Chat, skips string) string {
	head := "Nothing runs for `" + slackEscape(c.Command+" "+c.Text) + "`"
	if skips == "" {
		return head + ": no workflow takes " + slackEscape(c.Command) + " commands."
	}
	return head + ": " + slackEscape(skips) + "."
}

// slackEscape escapes the three characters Slack's message formatting
// treats as control characters, so that received text cannot turn into a
// mention or a link.
func slackEscape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}
