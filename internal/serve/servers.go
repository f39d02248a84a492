package serve

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/runfleet/runfleet/internal/config"
	"github.com/runfleet/runfleet/internal/engine"
	"github.com/runfleet/runfleet/internal/metrics/promexport"
	"github.com/runfleet/runfleet/internal/statuspage"
)

// servers are serve's HTTP servers, bound and ready: the main one on
// server.listen, and the metrics one on server.metrics_address when set.
type servers struct {
	main      *http.Server
	mainLn    net.Listener
	metrics   *http.Server // nil: /metrics is on the main server
	metricsLn net.Listener
}

// newServers builds the routes and binds the listeners (or takes those
// opts hands over).
func newServers(cfg *config.Config, opts Options, eng *engine.Engine, st *state, rec *promexport.Recorder,
	page *statuspage.Recorder, boot *bootstrap, log *slog.Logger) (*servers, error) {
	handler, err := routes(cfg, eng, st.store, st.deadLetters, rec, log, page)
	if err != nil {
		return nil, fmt.Errorf("serve: %w", err)
	}
	if boot != nil {
		if err := boot.cache.useStore(st.store); err != nil {
			return nil, err
		}
	}
	if handler, err = boot.mount(cfg, eng, handler, log); err != nil {
		return nil, err
	}
	s := &servers{main: newHTTPServer(handler, log), mainLn: opts.Listener}
	if s.mainLn == nil {
		if s.mainLn, err = net.Listen("tcp", cfg.Server.Listen); err != nil {
			return nil, fmt.Errorf("serve: listen on %s (server.listen): %w", cfg.Server.Listen, err)
		}
	}
	s.metrics, s.metricsLn, err = metricsServer(cfg, rec, opts.MetricsListener, log)
	if err != nil {
		_ = s.mainLn.Close()
		return nil, err
	}
	return s, nil
}

// addr is where the main server listens.
func (s *servers) addr() net.Addr { return s.mainLn.Addr() }

// serveUntil serves until ctx is done or a server fails, then finishes
// the requests in flight within timeout and cuts off the rest.
func (s *servers) serveUntil(ctx context.Context, timeout time.Duration, log *slog.Logger) (err error) {
	serveErr := make(chan error, 2)
	go func() { serveErr <- s.main.Serve(s.mainLn) }()
	if s.metrics != nil {
		go func() { serveErr <- s.metrics.Serve(s.metricsLn) }()
	}
	select {
	case <-ctx.Done():
		log.Info("shutting down: finishing requests in flight, then stopping workers", "timeout", timeout.String())
	case err = <-serveErr:
		log.Error("HTTP server failed; shutting down", "error", err)
		err = fmt.Errorf("serve: HTTP server: %w", err)
	}
	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), timeout)
	defer cancel()
	if serr := s.main.Shutdown(shutdownCtx); serr != nil {
		log.Warn("requests still in flight at the shutdown timeout were cut off", "error", serr)
		_ = s.main.Close()
	}
	if s.metrics != nil {
		if serr := s.metrics.Shutdown(shutdownCtx); serr != nil {
			_ = s.metrics.Close()
		}
	}
	return err
}
