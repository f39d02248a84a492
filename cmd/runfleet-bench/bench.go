package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/runfleet/runfleet/internal/store/postgres/pgtest"
)

// firstJobID starts the job ids the driver makes up: far above the example
// payloads' ids, so a shared store could never mix the two.
const firstJobID = 8_000_000_000

// expectedWarnings are logged at every start with a simulated GitHub and
// simulated machines, as they should be; they are no finding of the
// benchmark. Neither is expectedFleetWarning, logged by each replica on
// PostgreSQL with a simulated GitHub and provider (see fleetMarkdown).
var expectedWarnings = []string{"GitHub is SIMULATED", "machines are SIMULATED"}

const expectedFleetWarning = "simulated in this process only"

// expected reports whether a problem line is one every start logs.
func expected(line string) bool {
	for _, w := range expectedWarnings {
		if strings.Contains(line, w) {
			return true
		}
	}
	return false
}

// benchmark runs the parts, each on a fresh child: the sequential
// latency run; bursts in a row on one server, the pool growing; one large
// burst; with -scaleset, the sequential run and a burst through a scale
// set; with -postgres, replicas. It returns what it measured even when a part failed.
func benchmark(ctx context.Context, s settings, progress io.Writer) (*report, error) {
	payload, err := loadPayload(s.payload)
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(s.bin); err != nil {
		return nil, fmt.Errorf("%s: %w (run `make runfleet` first)", s.bin, err)
	}
	dir, err := os.MkdirTemp("", "runfleet-bench-*")
	if err != nil {
		return nil, err
	}
	if s.keep {
		fmt.Fprintf(progress, "runfleet-bench: keeping %s\n", dir)
	} else {
		defer os.RemoveAll(dir)
	}

	rep := &report{settings: s, started: time.Now(), machine: describeMachine(s.bin), problems: map[string]int{}}
	rep.pressureBefore = pressure()
	defer func() { rep.pressureAfter = pressure() }()
	nextJob := int64(firstJobID)
	jobs := func(n int) []int64 {
		ids := make([]int64, n)
		for i := range ids {
			ids[i] = nextJob
			nextJob++
		}
		return ids
	}

	// withChild runs part on a fresh child and always stops it.
	withChild := func(name string, maxRunners int, o childOptions, part func(*child) error) error {
		fmt.Fprintf(progress, "runfleet-bench: %s: starting runfleet serve\n", name)
		c, err := startChild(ctx, s, dir, name, maxRunners, o)
		if err != nil {
			return err
		}
		rep.idleRSS = append(rep.idleRSS, idleRSS(c))
		partErr := part(c)
		stopErr := c.stop()
		for k, v := range c.logs.problemLines() {
			if !expected(k) {
				rep.problems[name+": "+k] += v
			}
		}
		return errors.Join(partErr, stopErr)
	}

	err = withChild("latency", s.latencyJobs, childOptions{}, func(c *child) error {
		fmt.Fprintf(progress, "runfleet-bench: latency: %d sequential jobs\n", s.latencyJobs)
		rep.latency, err = latencyRun(ctx, c, payload, jobs(s.latencyJobs))
		return err
	})
	if err != nil {
		return rep, fmt.Errorf("latency run: %w", err)
	}

	err = withChild("growing", s.steps*s.burst, childOptions{}, func(c *child) error {
		for step := range s.steps {
			label := fmt.Sprintf("burst %d of %d, same server", step+1, s.steps)
			fmt.Fprintf(progress, "runfleet-bench: %s: %d jobs\n", label, s.burst)
			b, err := burstRun(ctx, c, payload, label, jobs(s.burst), step*s.burst, s.clients)
			if err != nil {
				return err
			}
			rep.bursts = append(rep.bursts, b)
		}
		return nil
	})
	if err != nil {
		return rep, fmt.Errorf("growing-pool bursts: %w", err)
	}

	if s.bigBurst > 0 {
		err = withChild("single", s.bigBurst, childOptions{}, func(c *child) error {
			label := "one burst, fresh server"
			fmt.Fprintf(progress, "runfleet-bench: %s: %d jobs\n", label, s.bigBurst)
			b, err := burstRun(ctx, c, payload, label, jobs(s.bigBurst), 0, s.clients)
			if err != nil {
				return err
			}
			rep.bursts = append(rep.bursts, b)
			return nil
		})
		if err != nil {
			return rep, fmt.Errorf("single large burst: %w", err)
		}
	}
	if s.scaleSet {
		if err := scaleSetRuns(ctx, s, withChild, rep, progress); err != nil {
			return rep, fmt.Errorf("scale set: %w", err)
		}
	}
	if s.postgres != "" {
		if err := postgresRuns(ctx, s, dir, payload, jobs, rep, progress); err != nil {
			return rep, fmt.Errorf("postgresql: %w", err)
		}
	}
	return rep, nil
}

// postgresAuto is the -postgres value that has the driver start its own
// PostgreSQL server.
const postgresAuto = "auto"

// postgresRuns measures replicas on PostgreSQL: for each replica count, a
// fresh fleet on a fresh schema, the sequential latency run and one burst,
// webhooks spread over the replicas.
func postgresRuns(ctx context.Context, s settings, dir string, payload *payloadTemplate, jobs func(int) []int64, rep *report, progress io.Writer) error {
	if s.postgres == postgresAuto {
		fmt.Fprintf(progress, "runfleet-bench: starting a PostgreSQL server\n")
		// As root, the server runs as the postgres user, which must get
		// through the driver's private directory to its own.
		if err := os.Chmod(dir, 0o711); err != nil {
			return err
		}
		srv, err := pgtest.StartServer(filepath.Join(dir, "postgres"))
		if err != nil {
			return err
		}
		defer srv.Stop()
		if err := srv.CreateDatabase(ctx, "bench"); err != nil {
			return err
		}
		s.postgres = srv.DSN("bench")
	}
	for _, n := range s.replicas {
		name := fmt.Sprintf("pg%d", n)
		fmt.Fprintf(progress, "runfleet-bench: %s: starting %d runfleet serve replicas on PostgreSQL\n", name, n)
		c, err := startFleet(ctx, s, dir, name, s.latencyJobs+s.burst, n, s.postgres)
		if err != nil {
			return err
		}
		run := &fleetRun{replicas: n}
		run.latency, err = latencyRun(ctx, c, payload, jobs(s.latencyJobs))
		if err == nil {
			label := fmt.Sprintf("%d replica(s), PostgreSQL", n)
			fmt.Fprintf(progress, "runfleet-bench: %s: %d jobs\n", label, s.burst)
			run.burst, err = burstRun(ctx, c, payload, label, jobs(s.burst), s.latencyJobs, s.clients)
		}
		stopErr := stopFleet(c)
		for k, v := range c.logs.problemLines() {
			if !expected(k) && !strings.Contains(k, expectedFleetWarning) {
				rep.problems[name+": "+k] += v
			}
		}
		if err = errors.Join(err, stopErr); err != nil {
			return fmt.Errorf("%d replicas: %w", n, err)
		}
		rep.fleets = append(rep.fleets, run)
	}
	return nil
}

func idleRSS(c *child) int64 {
	m, err := readMemory(c.pid())
	if err != nil {
		return 0
	}
	return m.rss
}
