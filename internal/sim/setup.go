package sim

import (
	"slices"
	"strings"
	"time"

	"github.com/runfleet/runfleet/internal/runner"
)

const (
	// controllerID names this runfleet installation in GitHub.
	controllerID = "sim"
	// providerTimeout bounds provider calls other than create, in the
	// engine and in the simulated provider's hangs alike.
	providerTimeout = 2 * time.Minute
	// bootstrapTimeout is the pools': a create, and a runner's first
	// coming online, may take this long.
	bootstrapTimeout = 10 * time.Minute
)

// simPools are the pools runfleet serves: linux (x64) and gpu, both at the
// organization. A linux job can be taken by a gpu runner too (its labels
// cover the job's), so jobs regularly run on runners made for others.
func simPools(cfg Config) runner.Pools {
	if cfg.Roomy {
		pools := simPools(Config{MinIdle: cfg.MinIdle, Warm: cfg.Warm})
		for i := range pools {
			pools[i].MaxRunners = 30
		}
		return pools
	}
	pools := runner.Pools{
		{Name: "linux", Owner: runner.Owner{Org: org}, Labels: []string{"linux", "x64"}, MaxRunners: 8, MinIdle: cfg.MinIdle, Warm: cfg.Warm,
			BootstrapTimeout: bootstrapTimeout, ProviderTimeout: providerTimeout},
		{Name: "gpu", Owner: runner.Owner{Org: org}, Labels: []string{"linux", "x64", "gpu"}, MaxRunners: 4,
			BootstrapTimeout: bootstrapTimeout, ProviderTimeout: providerTimeout},
	}
	if cfg.ScaleSet != nil {
		pools = append(pools, ssPoolOf(*cfg.ScaleSet))
	}
	return pools
}

// jobKinds are the jobs GitHub queues, by share: most are for the pools,
// some no pool can serve (an architecture nobody has, another
// organization), which must stay untouched.
var jobKinds = []struct {
	share  int
	repo   string
	labels []string
}{
	{45, "acme/app", []string{"self-hosted", "linux", "x64"}},
	{20, "acme/lib", []string{"self-hosted", "Linux"}},
	{20, "acme/ml", []string{"self-hosted", "gpu"}},
	{5, "acme/ml", []string{"self-hosted", "linux", "x64", "gpu"}},
	{5, "acme/app", []string{"self-hosted", "linux", "arm64"}},
	{5, "other/app", []string{"self-hosted", "linux", "x64"}},
}

// scheduleJobs plans the load phase's arrivals (sometimes in bursts) and
// returns when the last job arrives.
func (w *world) scheduleJobs() time.Time {
	t := w.now()
	id := int64(1000)
	for n := 0; n < w.cfg.Jobs; {
		t = t.Add(time.Duration(w.rng.ExpFloat64() * float64(w.cfg.ArrivalMean)))
		burst := 1
		if chance(w.rng, w.cfg.Bursts) {
			burst = 5 + w.rng.IntN(11)
			w.stats.inc("jobs.bursts")
		}
		for k := 0; k < burst && n < w.cfg.Jobs; k++ {
			id++
			n++
			j := w.newJob(id)
			w.sched.at(t, 0, func() { w.gh.queueJob(j) })
		}
	}
	return t
}

func (w *world) newJob(id int64) *ghJob {
	if w.actions != nil && chance(w.rng, w.actions.cfg.Share) {
		j := &ghJob{ID: id, RunID: id * 10, RunAttempt: 1, Repo: "acme/app", Org: org}
		w.gh.lastJobID = max(w.gh.lastJobID, id)
		w.actions.newScaleSetJob(j)
		return j
	}
	roll := w.rng.IntN(100)
	kind := jobKinds[len(jobKinds)-1]
	for _, k := range jobKinds {
		if roll < k.share {
			kind = k
			break
		}
		roll -= k.share
	}
	owner, _, _ := strings.Cut(kind.repo, "/")
	j := &ghJob{ID: id, RunID: id * 10, RunAttempt: 1, Repo: kind.repo, Org: owner, Labels: slices.Clone(kind.labels)}
	w.gh.lastJobID = max(w.gh.lastJobID, id)
	if p, ok := w.pools.Match(j.Repo, j.Org, "", j.Labels); ok {
		j.Pool = p.Name
	}
	return j
}

// addForeignRunners gives a quarter of the seeds runners runfleet did not
// register at the same organization — a static machine, and a runner of
// another runfleet installation (its name prefix, another controller's
// label) — which take jobs too and must never be touched.
func (w *world) addForeignRunners() {
	if w.rng.IntN(4) != 0 {
		return
	}
	for _, f := range []struct {
		name   string
		labels []string
	}{
		{"static-builder-1", []string{"self-hosted", "linux", "x64"}},
		{runner.NamePrefix + "linux-77-1", []string{"self-hosted", "linux", "x64", runner.ControllerLabel("other")}},
	} {
		r := w.gh.register(f.name, org, f.labels, true, false)
		m := &machine{pid: "static-" + f.name, name: f.name, alive: true, foreign: true, runner: r}
		r.machine, r.online = m, true
		w.stats.inc("github.foreign_runners")
	}
}

// rngReader reads the seeded generator as bytes.
type rngReader struct{ r interface{ Uint64() uint64 } }

func (r rngReader) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(r.r.Uint64())
	}
	return len(p), nil
}
