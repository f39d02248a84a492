// Command runfleet-bench is the load driver behind `make bench`: it starts
// an already built `runfleet serve` (embedded mode, simulated GitHub, one
// pool whose simulated provider has no latency) as a child process on a free
// loopback port, drives it with signed workflow_job webhooks, and prints
// Markdown tables: webhook → provider create latency, 1,000-job bursts
// (jobs/s, duplicates), and the child's CPU per job and peak RSS as the pool
// grows; then the same burst and a sequential run through a scale-set pool
// whose listener long-polls a fake Actions service. It talks to nothing
// but 127.0.0.1, every loop is bounded, and it stops the child before it
// exits.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// settings are the driver's flags.
type settings struct {
	bin         string
	payload     string
	out         string
	workers     int
	clients     int
	latencyJobs int
	burst       int
	steps       int
	bigBurst    int
	timeout     time.Duration
	keep        bool
	// postgres is a PostgreSQL DSN: when set, the latency run and one
	// burst are repeated on replicas sharing that database, once for each
	// count in replicas.
	postgres string
	replicas []int
	// scaleSet adds the runs through a scale-set pool: a -burst of jobs
	// queued at once on a fake Actions service, and scaleSetLatencyJobs
	// one at a time (0 skips that).
	scaleSet            bool
	scaleSetLatencyJobs int
}

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("runfleet-bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var s settings
	fs.StringVar(&s.bin, "bin", "bin/runfleet", "the runfleet binary to benchmark (make builds it)")
	fs.StringVar(&s.payload, "payload", "examples/payloads/queued.json", "a queued workflow_job payload; each job gets its own workflow_job.id")
	fs.StringVar(&s.out, "out", "", "also write the Markdown report to this file")
	fs.IntVar(&s.workers, "workers", 16, "engine.workers of the served config")
	fs.IntVar(&s.clients, "clients", 16, "concurrent webhook senders in a burst")
	fs.IntVar(&s.latencyJobs, "latency-jobs", 200, "sequential jobs in the latency run")
	fs.IntVar(&s.burst, "burst", 1000, "jobs per burst")
	fs.IntVar(&s.steps, "steps", 3, "bursts in a row on one server, so the pool grows by -burst each time")
	fs.IntVar(&s.bigBurst, "big-burst", 3000, "jobs in one single burst on a fresh server (0 skips it)")
	fs.DurationVar(&s.timeout, "timeout", 10*time.Minute, "give up after this long")
	fs.BoolVar(&s.keep, "keep", false, "keep the temporary directory (configs, stores, child logs)")
	fs.StringVar(&s.postgres, "postgres", os.Getenv(dsnEnv), "a PostgreSQL DSN (default $"+dsnEnv+"), or \"auto\" to start a server (Debian's, as the tests do): also measure serve replicas on it, each run in a fresh schema")
	fs.BoolVar(&s.scaleSet, "scaleset", true, "also measure the scale-set intake: a -burst of jobs queued at once on a fake Actions service (JobAssigned, as github.com assigns), and -scaleset-latency-jobs one at a time")
	fs.IntVar(&s.scaleSetLatencyJobs, "scaleset-latency-jobs", 100, "with -scaleset: sequential jobs through the scale set (0 skips them)")
	replicas := fs.String("replicas", "1,3", "with -postgres: the replica counts to measure")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	for _, f := range strings.Split(*replicas, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			fmt.Fprintf(stderr, "runfleet-bench: -replicas %q: want counts ≥ 1, comma-separated\n", *replicas)
			return 2
		}
		s.replicas = append(s.replicas, n)
	}
	if s.latencyJobs < 1 || s.burst < 1 || s.steps < 1 || s.clients < 1 || s.workers < 1 || s.bigBurst < 0 || s.scaleSetLatencyJobs < 0 {
		fmt.Fprintln(stderr, "runfleet-bench: -latency-jobs, -burst, -steps, -clients and -workers must be ≥ 1, -big-burst and -scaleset-latency-jobs ≥ 0")
		return 2
	}

	ctx, cancel := context.WithTimeout(context.Background(), s.timeout)
	defer cancel()
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()

	rep, err := benchmark(ctx, s, stderr)
	if rep != nil {
		text := rep.markdown()
		fmt.Fprint(stdout, text)
		if s.out != "" {
			if werr := os.WriteFile(s.out, []byte(text), 0o644); werr != nil {
				fmt.Fprintf(stderr, "runfleet-bench: %v\n", werr)
				return 1
			}
		}
	}
	if err != nil {
		fmt.Fprintf(stderr, "runfleet-bench: %v\n", err)
		return 1
	}
	if rep.failed() {
		fmt.Fprintln(stderr, "runfleet-bench: a correctness check failed (see the report)")
		return 1
	}
	return 0
}
