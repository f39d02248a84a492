package sim

import (
	"hash/fnv"
	"os/exec"
	"strings"
	"testing"
)

// exploreBase is where explored windows start: past every seed the fixed
// runs (make test: 1–200; make sim: 1–20,000) use, so each window is new
// ground.
const exploreBase = 1_000_000

// exploreWindow returns the first seed of commit's window: deterministic
// per commit, so a failure replays on the same commit, and different for
// every commit, so each change looks at seeds no run has looked at.
func exploreWindow(commit string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(commit))
	return exploreBase + h.Sum64()%1_000_000_000_000
}

// TestSimulationExplore runs a window of seeds derived from the commit
// under test (make test passes it; go test asks git). A failing seed
// prints the same replay line as TestSimulation's.
func TestSimulationExplore(t *testing.T) {
	if *flagSeed != 0 {
		t.Skip("-seed replays one seed in TestSimulation")
	}
	commit := *flagExplore
	if commit == "" {
		out, err := exec.Command("git", "rev-parse", "HEAD").Output()
		if err != nil {
			t.Fatalf("no commit to derive the explored seeds from: pass -explore COMMIT (git rev-parse HEAD: %v)", err)
		}
		commit = strings.TrimSpace(string(out))
	}
	seeds, jobs := *flagWindow, 50
	if testing.Short() {
		seeds, jobs = 10, 30
	}
	first := exploreWindow(commit)
	t.Logf("exploring seeds %d–%d (-jobs %d), derived from commit %s", first, first+uint64(seeds)-1, jobs, commit)
	results := runSeedsFrom(t, first, seeds, jobs)
	var failed int
	for _, r := range results {
		if !r.Failed() {
			continue
		}
		if failed++; failed <= 3 {
			t.Error(failureReport(r, jobs))
			continue
		}
		t.Errorf("seed %d: %s\n  replay: %s", r.Seed, r.Violations[0], replayLine(r.Seed, jobs))
	}
	t.Logf("%d seeds explored, %d failing", len(results), failed)

	// The same window with the scale-set world (TestSimulationScaleSet's),
	// half as many seeds: each commit also looks at new scale-set ground.
	ssSeeds, ssJobs := max(seeds/2, 1), 30
	if testing.Short() {
		ssJobs = 20
	}
	t.Logf("exploring scale-set seeds %d–%d (-ssjobs %d)", first, first+uint64(ssSeeds)-1, ssJobs)
	ssFailed := 0
	for _, r := range runSeedsWith(t, first, ssSeeds, ssJobs, ssSeedConfig) {
		if !r.Failed() {
			continue
		}
		if ssFailed++; ssFailed <= 3 {
			t.Error(failureReportWith(r, ssReplayLine(r.Seed, ssJobs)))
			continue
		}
		t.Errorf("seed %d: %s\n  replay: %s", r.Seed, r.Violations[0], ssReplayLine(r.Seed, ssJobs))
	}
	t.Logf("%d scale-set seeds explored, %d failing", ssSeeds, ssFailed)
}

func TestExploreWindowIsPerCommit(t *testing.T) {
	a, b := exploreWindow("1c3732b"), exploreWindow("2237201")
	if a == b || a < exploreBase || b < exploreBase {
		t.Fatalf("windows %d and %d: want distinct, from %d on", a, b, exploreBase)
	}
	if exploreWindow("1c3732b") != a {
		t.Fatal("a commit's window moved")
	}
}
