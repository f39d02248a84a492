package sim

import (
	"testing"
	"time"

	"github.com/runfleet/runfleet/internal/runner"
)

// TestSimulationServerlessWarm is TestSimulationServerless with the linux
// pool's warm runners sized from its job ledger (pools[].warm), now that
// the DynamoDB store lists a pool's arrivals: a forecast never breaks
// exactly one runner per job, max_runners or nothing left running, on the
// store the Lambda reconciler sizes from. Like that test it is not
// replayable to the step (SQS decides delivery order).
func TestSimulationServerlessWarm(t *testing.T) {
	jobs, seed := 15, uint64(3)
	if testing.Short() {
		jobs = 8
	}
	cfg := seedConfig(seed, jobs)
	cfg.Roomy, cfg.LongTail = true, false
	// The warm target whatever seedConfig's rule for this seed becomes.
	cfg.Warm = &runner.WarmPolicy{Target: 10 * time.Second, Percentile: 90, MaxIdle: 3}
	cfg.ReconcileInterval, cfg.Quiescence = time.Minute, 30*time.Minute
	started := time.Now()
	r := Run(cfg, newServerlessBackend(t), NewEngine)
	t.Logf("seed %d (adaptive warm pool) on DynamoDB Local + moto SQS: %d job lifecycles over %s virtual in %s real\n%s",
		seed, r.Lifecycles, r.Virtual.Round(time.Second), time.Since(started).Round(time.Millisecond), r.Stats)
	if r.Failed() {
		t.Error(failureReportWith(r, "go test ./internal/sim -run TestSimulationServerlessWarm (SQS decides delivery order: the run is not replayable to the step)"))
	}
}
