package bench

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"gopkg.in/yaml.v3"

	"github.com/hookrun/hookrun/internal/app"
	"github.com/hookrun/hookrun/queue"
)

// secret signs every delivery the bench sends.
const secret = "hookrun-bench-secret"

// floorStream is the scratch stream of the raw-publish floor: the same
// settings as queue.StreamRuns.
const floorStream = "BENCH_FLOOR"

// noopWorkflow is a one-step `true` workflow that matches the payload
// (pull_request opened on master by its OWNER). Ingest never runs it (no
// runner consumes); the memory phase runs it 10,000 times.
func noopWorkflow(name string) string {
	return "name: " + name + `
on:
  - event: pull_request
    actions: [opened]
    branches: [master]
steps:
  - id: noop
    run: "true"
`
}

// ingestMode is the stack of the ingest phase: serve's embedded queue and
// ingress without a runner, so that nothing but ingress works while it is
// measured (the stream grows and is purged).
var ingestMode = app.Mode{Name: "bench", Ingress: true}

// benchConfig is the server configuration of every stack the bench runs,
// in this process (openStack) or as a child (`hookrun serve` in the memory
// phase, `hookrun runner` in the separate dispatch): under dir, the queue
// embedded and listening on a loopback port (the bench and child runners
// connect to it), ingress on 127.0.0.1:0 for GitHub deliveries signed with
// secret and with the API, allow_repos the payload's owner. Host steps run as serve runs
// them (isolated as the step user when the bench runs as root), or as the
// bench's user where isolation would refuse them, as an operator not
// running hookrun as root has to configure it.
func benchConfig(dir string) *app.Config {
	on, off := true, false
	c := &app.Config{
		Listen:     "127.0.0.1:0",
		DataDir:    filepath.Join(dir, "data"),
		Workflows:  filepath.Join(dir, "workflows"),
		NATS:       app.NATSConfig{Listen: "127.0.0.1:0"},
		AllowRepos: []string{"Codertocat/*"},
		GitHub:     app.GitHubConfig{Enabled: &on, WebhookSecret: secret},
		GitLab:     app.GitLabConfig{Enabled: &off},
		API:        app.APIConfig{Token: "hookrun-bench-api-token"},
		// Shared with the `hookrun runner` child of the dispatch phase.
		Runs: app.RunsConfig{RequestKey: "hookrun-bench-request-key-0123456789abcdef"},
	}
	if os.Geteuid() != 0 {
		c.Runner.HostSteps = app.HostStepsSameUser
	}
	return c
}

// writeConfig writes c as a configuration file for a hookrun child, with
// only the keys that are set.
func writeConfig(path string, c *app.Config) error {
	var doc yaml.Node
	if err := doc.Encode(c); err != nil {
		return fmt.Errorf("encoding config: %w", err)
	}
	pruneUnset(&doc)
	data, err := yaml.Marshal(&doc)
	if err != nil {
		return fmt.Errorf("encoding config: %w", err)
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		return fmt.Errorf("writing config: %w", err)
	}
	return nil
}

// pruneUnset drops the keys of a mapping whose values are unset (null, "",
// 0, 0s, an empty list or mapping), which the child's defaults fill.
func pruneUnset(n *yaml.Node) bool {
	switch n.Kind {
	case yaml.DocumentNode:
		for _, c := range n.Content {
			pruneUnset(c)
		}
	case yaml.MappingNode:
		kept := n.Content[:0]
		for i := 0; i+1 < len(n.Content); i += 2 {
			if !pruneUnset(n.Content[i+1]) {
				kept = append(kept, n.Content[i], n.Content[i+1])
			}
		}
		n.Content = kept
		return len(kept) == 0
	case yaml.SequenceNode:
		return len(n.Content) == 0
	case yaml.ScalarNode:
		return n.Tag == "!!null" || n.Value == "" || n.Value == "0" || n.Value == "0s"
	}
	return false
}

// writeWorkflows writes workflow files into the stack's workflow
// directory.
func writeWorkflows(c *app.Config, files map[string]string) error {
	if err := os.MkdirAll(c.Workflows, 0o755); err != nil {
		return fmt.Errorf("creating workflow dir: %w", err)
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(c.Workflows, name), []byte(body), 0o644); err != nil {
			return fmt.Errorf("writing workflow %s: %w", name, err)
		}
	}
	return nil
}

// stack is a hookrun stack in this process, built by the composition root
// (internal/app) from benchConfig as `hookrun serve` builds its own.
type stack struct {
	app *app.App
	q   *queue.Queue
	url string // http://host:port of the ingress

	nc *nats.Conn          // the bench's own client of the embedded server, in-process
	js jetstream.JetStream //

	tcpNC *nats.Conn          // and over loopback TCP (the floor's second column)
	tcpJS jetstream.JetStream //

	cleanup []func() // run by close, last
}

// openStack writes the workflow files and starts the stack of mode m
// under dir (benchConfig), then connects the bench's own clients.
func openStack(ctx context.Context, dir string, logger *slog.Logger, m app.Mode, workflowFiles map[string]string) (*stack, error) {
	return openStackWith(ctx, benchConfig(dir), logger, m, workflowFiles)
}

// openStackWith is openStack with the configuration given.
func openStackWith(ctx context.Context, cfg *app.Config, logger *slog.Logger, m app.Mode, workflowFiles map[string]string) (*stack, error) {
	if err := writeWorkflows(cfg, workflowFiles); err != nil {
		return nil, err
	}
	a, err := app.Start(ctx, m, cfg, logger)
	if err != nil {
		return nil, fmt.Errorf("starting the stack: %w", err)
	}
	s := &stack{app: a, q: a.Queue(), url: a.URL()}
	// The floor publishes over the transport ingress uses: in-process.
	if s.nc, err = s.q.Connect("hookrun-bench"); err != nil {
		s.close()
		return nil, fmt.Errorf("connecting to the embedded server: %w", err)
	}
	if s.js, err = jetstream.New(s.nc); err != nil {
		s.close()
		return nil, fmt.Errorf("creating jetstream context: %w", err)
	}
	if s.tcpNC, err = nats.Connect(s.q.ClientURL(), nats.Name("hookrun-bench-tcp")); err != nil {
		s.close()
		return nil, fmt.Errorf("connecting to the embedded server over tcp: %w", err)
	}
	if s.tcpJS, err = jetstream.New(s.tcpNC); err != nil {
		s.close()
		return nil, fmt.Errorf("creating jetstream context: %w", err)
	}
	return s, nil
}

func (s *stack) close() {
	if s.nc != nil {
		s.nc.Close()
	}
	if s.tcpNC != nil {
		s.tcpNC.Close()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	_ = s.app.Shutdown(ctx)
	cancel()
	for _, f := range s.cleanup {
		f()
	}
}

// purge empties a stream (work-queue streams grow while nobody consumes).
func (s *stack) purge(ctx context.Context, name string) error {
	st, err := s.js.Stream(ctx, name)
	if err != nil {
		return fmt.Errorf("looking up stream %s: %w", name, err)
	}
	if err := st.Purge(ctx); err != nil {
		return fmt.Errorf("purging stream %s: %w", name, err)
	}
	return nil
}

// sender posts signed GitHub pull_request deliveries of the payload.
type sender struct {
	client *http.Client
	url    string
	sig    string
	seq    atomic.Int64
	nonce  string
}

func newSender(baseURL string) *sender {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write(payload)
	tr := &http.Transport{MaxIdleConns: 512, MaxIdleConnsPerHost: 512, IdleConnTimeout: 90 * time.Second}
	return &sender{
		client: &http.Client{Transport: tr, Timeout: 30 * time.Second},
		url:    baseURL + "/hooks/github",
		sig:    "sha256=" + hex.EncodeToString(mac.Sum(nil)),
		nonce:  strconv.FormatInt(time.Now().UnixNano(), 36),
	}
}

// send posts one delivery with a fresh X-GitHub-Delivery and returns the
// answer's status and body.
func (s *sender) send(ctx context.Context) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.url, bytes.NewReader(payload))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-GitHub-Event", "pull_request")
	req.Header.Set("X-GitHub-Delivery", "bench-"+s.nonce+"-"+strconv.FormatInt(s.seq.Add(1), 10))
	req.Header.Set("X-Hub-Signature-256", s.sig)
	resp, err := s.client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, body, err
}

// accept sends one delivery and fails unless it was answered 202.
func (s *sender) accept(ctx context.Context) error {
	code, body, err := s.send(ctx)
	if err != nil {
		return err
	}
	if code != http.StatusAccepted {
		return fmt.Errorf("answered %d: %s", code, bytes.TrimSpace(body))
	}
	return nil
}

func (s *sender) close() { s.client.CloseIdleConnections() }

// runIngest measures (a) the raw-publish floor and (b) HTTP ingress at each
// concurrency, then the open loop.
func runIngest(ctx context.Context, cfg *Config, dir string, rep *Report) error {
	s, err := openStack(ctx, dir, cfg.Logger, ingestMode, map[string]string{"bench-ingest.yaml": noopWorkflow("bench-ingest")})
	if err != nil {
		return err
	}
	defer s.close()
	if _, err := s.js.CreateStream(ctx, jetstream.StreamConfig{
		Name:       floorStream,
		Subjects:   []string{"bench.floor.>"},
		Retention:  jetstream.WorkQueuePolicy,
		Storage:    jetstream.FileStorage,
		Replicas:   1,
		Duplicates: 2 * time.Minute,
	}); err != nil {
		return fmt.Errorf("creating stream %s: %w", floorStream, err)
	}
	snd := newSender(s.url)
	defer snd.close()

	floorOp := func(ctx context.Context, _ int) error {
		_, err := s.js.Publish(ctx, "bench.floor.pull_request", payload)
		return err
	}
	floorTCPOp := func(ctx context.Context, _ int) error {
		_, err := s.tcpJS.Publish(ctx, "bench.floor.pull_request", payload)
		return err
	}
	ingestOp := func(ctx context.Context, _ int) error { return snd.accept(ctx) }

	// Warm up both paths (connections, file store blocks, caches).
	warm := min(cfg.IngestOps, 200)
	closedLoop(ctx, 8, warm, floorOp)
	if r := closedLoop(ctx, 8, warm, ingestOp); r.Errors > 0 {
		return fmt.Errorf("warming up: %d of %d deliveries were not accepted (first: %v)", r.Errors, warm, firstErr(ctx, snd))
	}

	for _, c := range cfg.Concurrency {
		if err := errors2(s.purge(ctx, floorStream), s.purge(ctx, queue.StreamRuns)); err != nil {
			return err
		}
		fr := closedLoop(ctx, c, cfg.IngestOps, floorOp)
		ftr := closedLoop(ctx, c, cfg.IngestOps, floorTCPOp)
		ir := closedLoop(ctx, c, cfg.IngestOps, ingestOp)
		row := IngestRow{
			Concurrency: c, Ops: cfg.IngestOps,
			FloorPerSec: fr.perSecond(), FloorP50: fr.Latencies.P50, FloorP99: fr.Latencies.P99, FloorErrors: fr.Errors + ftr.Errors,
			FloorTCPPerSec: ftr.perSecond(),
			PerSec:         ir.perSecond(), P50: ir.Latencies.P50, P99: ir.Latencies.P99, P999: ir.Latencies.P999, Errors: ir.Errors,
		}
		if row.FloorPerSec > 0 {
			row.Ratio = row.PerSec / row.FloorPerSec
		}
		if row.FloorTCPPerSec > 0 {
			row.RatioTCP = row.PerSec / row.FloorTCPPerSec
		}
		if st, err := s.js.Stream(ctx, queue.StreamRuns); err == nil {
			if m, err := st.GetLastMsgForSubject(ctx, "hookrun.runs.bench-ingest"); err == nil {
				row.BytesPerRun = len(m.Data)
			}
		}
		rep.Ingest = append(rep.Ingest, row)
		fmt.Fprintf(cfg.Progress, "bench:   c=%d floor %.0f/s (tcp %.0f/s) ingress %.0f/s (b/a %.2f, vs tcp %.2f)\n",
			c, row.FloorPerSec, row.FloorTCPPerSec, row.PerSec, row.Ratio, row.RatioTCP)
	}
	if err := errors2(s.purge(ctx, floorStream), s.purge(ctx, queue.StreamRuns)); err != nil {
		return err
	}

	or := openLoop(ctx, cfg.OpenRate, cfg.OpenDuration, ingestOp)
	rep.OpenLoop = OpenLoop{
		RatePerSec: cfg.OpenRate, Duration: or.Elapsed.Seconds(), Sent: or.Ops,
		P50: or.Latencies.P50, P99: or.Latencies.P99, P999: or.Latencies.P999, Max: or.Latencies.Max,
		Refused: or.Errors, FirstError: or.FirstErr,
	}
	return nil
}

// firstErr sends one more delivery to name what went wrong.
func firstErr(ctx context.Context, s *sender) error { return s.accept(ctx) }

func errors2(a, b error) error {
	if a != nil {
		return a
	}
	return b
}
