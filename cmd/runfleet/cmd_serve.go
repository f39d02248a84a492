package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/runfleet/runfleet/internal/config"
	"github.com/runfleet/runfleet/internal/serve"
	"github.com/runfleet/runfleet/internal/telemetry"
)

const serveDescription = `Runs runfleet in embedded mode: the webhook endpoint (POST /webhook), the
operator API (/api/v1/), the status page (GET /), a health check
(GET /healthz), queue workers and the reconciler, with state in the store
store.kind names (bolt, the default: store.dir/state.db, store and queue in
one file that this process alone may open; postgres: store and queue in the
database whose DSN store.dsn_env or store.dsn_file holds). Logs go to stderr: text when stderr is a terminal, JSON lines
otherwise (--log-format).

The config is checked in full before anything starts; every problem is
listed and the exit status is 2. SIGINT or SIGTERM shuts down gracefully
(requests in flight finish, workers stop, files are closed); a second
signal exits at once.`

func (c *cli) serve(args []string) int {
	fs := c.newFlags("serve", "runfleet serve --config FILE [--listen HOST:PORT] [--log-level LEVEL] [--log-format text|json]", serveDescription)
	configPath := fs.String("config", c.getenv("RUNFLEET_CONFIG"), "config file (env RUNFLEET_CONFIG); see examples/local.yaml")
	listen := fs.String("listen", c.getenv("RUNFLEET_LISTEN"), "address to serve on, HOST:PORT, instead of the config's server.listen (env RUNFLEET_LISTEN)")
	levelName := fs.String("log-level", "info", "least severe log level written: debug, info, warn or error")
	formatName := fs.String("log-format", "", "log line format: text or json (default: text when stderr is a terminal, else json)")
	positional, status, done := parse(fs, args)
	if done {
		return status
	}
	if len(positional) > 0 {
		return c.usageError(fs, "unexpected argument %q", positional[0])
	}
	if *configPath == "" {
		return c.usageError(fs, "--config is required")
	}
	level, err := telemetry.ParseLevel(*levelName)
	if err != nil {
		return c.usageError(fs, "%v", err)
	}
	format, err := telemetry.ParseLogFormat(*formatName, c.stderr)
	if err != nil {
		return c.usageError(fs, "%v", err)
	}
	cfg, err := config.Load(*configPath)
	if err != nil {
		fmt.Fprintf(c.stderr, "runfleet: %v\n", err)
		return exitUsage
	}
	if *listen != "" {
		if err := cfg.OverrideListen(*listen); err != nil {
			return c.usageError(fs, "%v", err)
		}
	}
	log := telemetry.NewLoggerFormat(c.stderr, format, level, "controller_id", cfg.ControllerID)
	slog.SetDefault(log)

	ctx, stop := shutdownOnSignal(log)
	defer stop()
	b := currentBuild()
	err = serve.Run(ctx, serve.Options{Config: cfg, Logger: log, Version: b.version, Commit: b.commit})
	var fieldErr *config.FieldError
	switch {
	case errors.As(err, &fieldErr):
		fmt.Fprintf(c.stderr, "runfleet: config %s cannot be served:\n%v\n", *configPath, err)
		return exitUsage
	case err != nil:
		log.Error("runfleet serve failed", "error", err)
		return exitFailure
	}
	return exitOK
}

// shutdownOnSignal returns a context cancelled by the first SIGINT or
// SIGTERM; a second one exits at once, for when a graceful shutdown hangs.
func shutdownOnSignal(log *slog.Logger) (context.Context, func()) {
	ctx, cancel := context.WithCancel(context.Background())
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		sig := <-sigs
		log.Info("signal received; shutting down gracefully (send it again to exit at once)", "signal", sig.String())
		cancel()
		sig = <-sigs
		log.Warn("second signal received; exiting at once", "signal", sig.String())
		os.Exit(exitFailure)
	}()
	return ctx, func() {
		signal.Stop(sigs)
		cancel()
	}
}
