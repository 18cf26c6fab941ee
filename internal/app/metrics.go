package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// metricsServer is the /metrics listener of `hookrun runner`
// (runner.metrics_listen), which has no ingress listener to serve them on.
type metricsServer struct {
	srv  *http.Server
	ln   net.Listener
	done chan error
}

// startMetricsServer serves GET /metrics (cs, Go and process metrics, on a
// registry of their own) and GET /healthz on addr.
func startMetricsServer(ctx context.Context, addr string, cs []prometheus.Collector, logger *slog.Logger) (*metricsServer, error) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	reg.MustRegister(cs...)
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorLog: slog.NewLogLogger(logger.Handler(), slog.LevelWarn)}))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"status":"ok"}`))
	})
	ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listening on runner.metrics_listen %s: %w", addr, err)
	}
	m := &metricsServer{ln: ln, done: make(chan error, 1), srv: &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelDebug),
	}}
	go func() { m.done <- m.srv.Serve(ln) }()
	logger.Info("runner metrics listening", "addr", ln.Addr().String())
	return m, nil
}

// MetricsAddr is the address of runner.metrics_listen; nil without it.
func (a *App) MetricsAddr() net.Addr {
	if a.metricsSrv == nil {
		return nil
	}
	return a.metricsSrv.ln.Addr()
}

func (m *metricsServer) shutdown(ctx context.Context) error {
	err := m.srv.Shutdown(ctx)
	if serr := <-m.done; serr != nil && !errors.Is(serr, http.ErrServerClosed) {
		err = errors.Join(err, serr)
	}
	if err != nil {
		return fmt.Errorf("shutting down the metrics listener: %w", err)
	}
	return nil
}
