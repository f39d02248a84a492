package sim

import (
	"context"
	"flag"
	"fmt"
	"testing"
	"time"

	pgqueue "github.com/runfleet/runfleet/internal/queue/postgres"
	"github.com/runfleet/runfleet/internal/store/postgres"
	"github.com/runfleet/runfleet/internal/store/postgres/pgtest"
	"github.com/runfleet/runfleet/internal/testclock"
)

var (
	flagPostgresSeeds = flag.Int("pgseeds", 8, "TestSimulationPostgres: how many seeds to run on PostgreSQL")
	flagPostgresFirst = flag.Uint64("pgfirstseed", 1, "TestSimulationPostgres: the first seed")
	flagPostgresJobs  = flag.Int("pgjobs", 30, "TestSimulationPostgres: jobs a seed")
)

// postgresBackend is the replicas' state: the PostgreSQL store and the
// queue in the same database (postgres.OpenWithQueue, so admissions and
// their create messages are one transaction), on the virtual clock — the
// queue's due times and visibility timeouts are decided by it, as the
// bolt backend's are. A crash drops the process's connections; the rows
// stay, as they would for a replica killed with kill -9.
type postgresBackend struct {
	dsn string
}

func (b postgresBackend) Open(clock *testclock.Clock) (State, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	st, err := postgres.OpenWithQueue(ctx, b.dsn,
		pgqueue.Options{Now: clock.Now, MaxReceives: MaxReceives},
		postgres.WithClock(clock.Now))
	if err != nil {
		return State{}, fmt.Errorf("sim: open postgres state: %w", err)
	}
	return State{Store: st, Queue: st.Queue(), Close: st.Close}, nil
}

func (postgresBackend) RealTime() bool { return false }

// TestSimulationPostgres runs seeds of the simulation over the
// PostgreSQL store and queue (a real server, pgtest), each in a database
// of its own: the same engine, faults, crashes and checks as the bbolt
// runs. A failing seed prints its replay line; the same seed on bbolt
// (TestSimulation -seed N) is the first thing to compare with.
func TestSimulationPostgres(t *testing.T) {
	jobs, seeds := *flagPostgresJobs, *flagPostgresSeeds
	if testing.Short() {
		seeds = min(seeds, 2)
	}
	for seed := *flagPostgresFirst; seed < *flagPostgresFirst+uint64(seeds); seed++ {
		cfg := seedConfig(seed, jobs)
		started := time.Now()
		r := Run(cfg, postgresBackend{dsn: pgtest.NewDatabase(t)}, NewEngine)
		t.Logf("seed %d on PostgreSQL: %d job lifecycles over %s virtual in %s real; trace %s",
			seed, r.Lifecycles, r.Virtual.Round(time.Second), time.Since(started).Round(time.Millisecond), r.Digest)
		if r.Failed() {
			t.Error(failureReportWith(r, fmt.Sprintf("go test ./internal/sim -run 'TestSimulationPostgres$' -pgfirstseed %d -pgseeds 1 -pgjobs %d -v", seed, jobs)))
		}
	}
}
