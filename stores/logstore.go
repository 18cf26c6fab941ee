package stores

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/hookrun/hookrun/lines"
	"github.com/hookrun/hookrun/queue"
)

// Log line streams.
const (
	StreamStdout = "stdout"
	StreamStderr = "stderr"
	StreamSystem = "system" // hookrun's own notes about a step
)

// LogLine is one line of step output.
type LogLine struct {
	RunID  string    `json:"run_id"`
	StepID string    `json:"step_id"`
	Stream string    `json:"stream"` // stdout | stderr | system
	Text   string    `json:"text"`   // without the trailing newline
	Time   time.Time `json:"time"`
}

// StreamLogs is the stream of step output.
const StreamLogs = "HOOKRUN_LOGS"

const logsSubjectPrefix = "hookrun.logs."

// logsConfig is HOOKRUN_LOGS: step output kept for maxAge.
func logsConfig(maxAge time.Duration) jetstream.StreamConfig {
	return jetstream.StreamConfig{
		Name:        StreamLogs,
		Description: "hookrun step output",
		Subjects:    []string{logsSubjectPrefix + ">"},
		Retention:   jetstream.LimitsPolicy,
		MaxAge:      maxAge,
		Duplicates:  min(2*time.Minute, maxAge),
	}
}

// LogStore keeps step output on HOOKRUN_LOGS, subject
// hookrun.logs.<run>.<step>, so any node can tail a run.
type LogStore struct {
	stream  jetstream.Stream
	js      jetstream.JetStream // own context: its async errors are the log store's
	timeout time.Duration       // of one append's stall
	log     *slog.Logger

	mu     sync.Mutex
	errPub error // first async publish failure since the last Flush
}

// OpenLogs creates or updates the HOOKRUN_LOGS stream and returns its
// store.
func OpenLogs(ctx context.Context, o Options) (*LogStore, error) {
	st, err := queue.CreateStream(ctx, o.Shared, logsConfig(o.LogMaxAge))
	if err != nil {
		return nil, err
	}
	l := &LogStore{stream: st, timeout: o.Timeout, log: o.Logger}
	js, err := jetstream.New(o.JetStream.Conn(),
		jetstream.WithPublishAsyncTimeout(o.Timeout),
		jetstream.WithPublishAsyncMaxPending(1024),
		jetstream.WithPublishAsyncErrHandler(func(_ jetstream.JetStream, m *nats.Msg, err error) {
			l.mu.Lock()
			if l.errPub == nil {
				l.errPub = fmt.Errorf("appending log line to %s: %w", m.Subject, err)
			}
			l.mu.Unlock()
		}))
	if err != nil {
		return nil, fmt.Errorf("creating log store: %w", err)
	}
	l.js = js
	return l, nil
}

// subjectToken makes a step id usable as one subject token.
func subjectToken(s string) string {
	if queue.ValidToken(s) {
		return s
	}
	if s == "" {
		return "_"
	}
	return strings.Map(func(r rune) rune {
		switch r {
		case '.', '*', '>', ' ', '\t', '\r', '\n':
			return '_'
		}
		return r
	}, s)
}

// Append publishes one line asynchronously; Flush waits for the acks and
// reports failures. Safe for concurrent use; lines of one goroutine keep
// their order.
func (l *LogStore) Append(ctx context.Context, line LogLine) error {
	if err := checkID(line.RunID); err != nil {
		return fmt.Errorf("appending log line: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("appending log line for run %s: %w", line.RunID, err)
	}
	if line.Time.IsZero() {
		line.Time = time.Now().UTC()
	}
	if line.Stream == "" {
		line.Stream = StreamStdout
	}
	data, err := json.Marshal(line)
	if err != nil {
		return fmt.Errorf("appending log line for run %s: %w", line.RunID, err)
	}
	subj := logsSubjectPrefix + line.RunID + "." + subjectToken(line.StepID)
	if _, err := l.js.PublishMsgAsync(&nats.Msg{Subject: subj, Data: data}, jetstream.WithStallWait(l.timeout)); err != nil {
		return fmt.Errorf("appending log line for run %s: %w", line.RunID, err)
	}
	return nil
}

// Flush waits until every appended line is acknowledged and returns the
// first failure since the previous Flush.
func (l *LogStore) Flush(ctx context.Context) error {
	select {
	case <-l.js.PublishAsyncComplete():
	case <-ctx.Done():
		return fmt.Errorf("flushing log lines: %w", ctx.Err())
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	err := l.errPub
	l.errPub = nil
	return err
}

// Writer returns a writer that appends each line written to it (without
// its newline and a carriage return before it; a line of 64 KiB or more
// without newline is appended in pieces); a partial last line is appended on
// Close. Close does not Flush.
func (l *LogStore) Writer(runID, stepID, stream string) io.WriteCloser {
	w := &logWriter{l: l, run: runID, step: stepID, stream: stream}
	w.Init(w, lines.Options{})
	return w
}

// logWriter is the line writer of one stream of one step.
type logWriter struct {
	lines.Writer
	l                 *LogStore
	run, step, stream string
}

// WriteLines appends one line.
func (w *logWriter) WriteLines(line []byte) error {
	return w.l.Append(context.Background(), LogLine{RunID: w.run, StepID: w.step, Stream: w.stream, Text: string(lines.Trim(line))})
}

// Read returns the run's stored lines in append order.
func (l *LogStore) Read(ctx context.Context, runID string) ([]LogLine, error) {
	cons, err := l.runConsumer(ctx, runID, "reading")
	if err != nil {
		return nil, err
	}
	var out []LogLine
	for {
		batch, err := cons.FetchNoWait(256)
		if err != nil {
			return nil, fmt.Errorf("reading logs of run %s: %w", runID, err)
		}
		n, last := 0, false
		for m := range batch.Messages() {
			n++
			var line LogLine
			if json.Unmarshal(m.Data(), &line) == nil {
				out = append(out, line)
			}
			if md, err := m.Metadata(); err == nil && md.NumPending == 0 {
				last = true
			}
		}
		if err := batch.Error(); err != nil && !errors.Is(err, jetstream.ErrNoMessages) {
			return nil, fmt.Errorf("reading logs of run %s: %w", runID, err)
		}
		if n == 0 || last {
			return out, nil
		}
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("reading logs of run %s: %w", runID, err)
		}
	}
}

// runConsumer checks runID and returns an ordered consumer of the run's
// stored lines; its errors say what the caller was doing (verb).
func (l *LogStore) runConsumer(ctx context.Context, runID, verb string) (jetstream.Consumer, error) {
	if err := checkID(runID); err != nil {
		return nil, fmt.Errorf("%s logs: %w", verb, err)
	}
	cons, err := l.stream.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{logsSubjectPrefix + runID + ".>"},
	})
	if err != nil {
		return nil, fmt.Errorf("%s logs of run %s: %w", verb, runID, err)
	}
	return cons, nil
}

// Follow sends the run's stored lines, then new ones as they are appended,
// until ctx ends; then the channel is closed.
func (l *LogStore) Follow(ctx context.Context, runID string) (<-chan LogLine, error) {
	cons, err := l.runConsumer(ctx, runID, "following")
	if err != nil {
		return nil, err
	}
	it, err := cons.Messages()
	if err != nil {
		return nil, fmt.Errorf("following logs of run %s: %w", runID, err)
	}
	out := make(chan LogLine, 64)
	go func() {
		<-ctx.Done()
		it.Stop()
	}()
	go func() {
		defer close(out)
		for {
			m, err := it.Next()
			if err != nil {
				if errors.Is(err, jetstream.ErrMsgIteratorClosed) || ctx.Err() != nil {
					return
				}
				l.log.Debug("following logs", "run", runID, "err", err)
				select {
				case <-ctx.Done():
					return
				case <-time.After(100 * time.Millisecond):
				}
				continue
			}
			var line LogLine
			if json.Unmarshal(m.Data(), &line) != nil {
				continue
			}
			select {
			case out <- line:
			case <-ctx.Done():
				return
			}
		}
	}()
	return out, nil
}

// purgeRun removes the step output of run id (the retention sweep).
func (l *LogStore) purgeRun(ctx context.Context, id string) error {
	if err := l.stream.Purge(ctx, jetstream.WithPurgeSubject(logsSubjectPrefix+id+".>")); err != nil {
		return fmt.Errorf("purging the logs of run %s: %w", id, err)
	}
	return nil
}
