package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/runfleet/runfleet/internal/cacheagent"
	"github.com/runfleet/runfleet/internal/metadata"
)

const cacheAgentDescription = `Runs on a runner machine of a pool in cache.pools (docs/actions-cache.md):
an HTTPS endpoint for GitHub's results host, which the machine's /etc/hosts
points at it. It answers actions/cache's calls with runfleet's cache, using
the cache token runfleet mints for the machine's job, and passes every other
call (artifacts, logs) to the real host, found with DNS. Its certificate is
issued by a CA made for this machine alone (kept in --state-dir, written to
--ca-file for the trust stores). The runner's job-started hook tells it,
on --socket, which job the machine runs (--print-hook prints that hook).
--config is the JSON that metadata/cache-agent gave the machine at boot.`

func (c *cli) cacheAgent(ctx context.Context, args []string) int {
	fs := c.newFlags("cache-agent", "runfleet cache-agent --config FILE [--listen ADDR] [--socket PATH] [--state-dir DIR] [--ca-file FILE] [--dns HOST:PORT] | --print-hook | --print-hosts", cacheAgentDescription)
	configFile := fs.String("config", "/etc/runfleet/cache-agent.json", "the agent's configuration (metadata/cache-agent's answer; root only)")
	listen := fs.String("listen", "127.0.0.1:443", "the HTTPS address /etc/hosts gives the results host")
	socket := fs.String("socket", "/run/runfleet/cache-agent.sock", "the job-started hook's Unix socket")
	stateDir := fs.String("state-dir", "/var/lib/runfleet/cache-agent", "keeps the machine's CA key (0700)")
	caFile := fs.String("ca-file", "/usr/local/share/ca-certificates/runfleet-cache-agent.crt", "where the CA certificate is written for the trust stores")
	dns := fs.String("dns", "", "DNS server (host:port) for the pass-through; default: the system's upstream, never /etc/hosts")
	printHook := fs.Bool("print-hook", false, "print the runner's job-started hook script for --socket and exit")
	printHosts := fs.Bool("print-hosts", false, "print the results hosts of --config, one a line, for /etc/hosts, and exit")
	if _, status, done := parse(fs, args); done {
		return status
	}
	if *printHook {
		fmt.Fprint(c.stdout, cacheagent.HookScript(*socket))
		return exitOK
	}
	raw, err := os.ReadFile(*configFile)
	if err != nil {
		return c.fail(err)
	}
	var cfg metadata.CacheAgentConfig
	if err := json.Unmarshal(raw, &cfg); err != nil {
		return c.fail(fmt.Errorf("cache-agent: %s: %w", *configFile, err))
	}
	if *printHosts {
		for _, h := range cfg.ResultsHosts {
			fmt.Fprintln(c.stdout, h)
		}
		return exitOK
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	log := slog.New(slog.NewTextHandler(c.stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	err = cacheagent.Run(ctx, cacheagent.RunOptions{
		Config: cfg, Listen: *listen, Socket: *socket, StateDir: *stateDir, CAFile: *caFile, DNSServer: *dns, Log: log,
	})
	if err != nil {
		return c.fail(err)
	}
	return exitOK
}
