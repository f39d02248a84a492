package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/runfleet/runfleet/internal/serveproc"
)

// Environment variables carrying what the replicas share besides the
// webhook secret and API token: the App's key (one server reads a file),
// the instance token key (one server makes its own and keeps it in its
// store directory, which replicas do not have) and the DSN.
const (
	appKeyEnv           = "RUNFLEET_CHAOS_APP_KEY"
	instanceTokenKeyEnv = "RUNFLEET_CHAOS_INSTANCE_TOKEN_KEY"
	dsnEnv              = "RUNFLEET_CHAOS_PG_DSN"
)

// replicaTakeoverGrace is engine.takeover_grace of the replicas: short,
// so the creates a killed replica left behind are taken over within the
// run; every replica here reads one clock.
const replicaTakeoverGrace = 10 * time.Second

// replicaFleet is N `runfleet serve` on one PostgreSQL database, each on
// its own port with its own config and directory (config and logs; state
// is all in the database), every secret the same.
// Webhooks go to a replica the load balancer thinks up, the machines and
// the operator through the load balancer itself; like a real one it
// notices a dead replica only at its next health check (lbNoticeAfter),
// and meanwhile some requests meet the dead replica.
type replicaFleet struct {
	names    []string
	replicas []*server
	db       *database
	lb       *balancer
	plan     replicaPlan
	// track follows what each fault left (faulttrack.go).
	track     *faultTracker
	stopTrack context.CancelFunc
	// dbGate: a replica starts only while the database is up (its start
	// migrates and would fail), and the database goes down only when no
	// replica is starting.
	dbGate sync.RWMutex

	mu sync.Mutex
	up []bool // started, healthy and not killed since
	// killedAt is when each replica down was killed (zero if it was not).
	killedAt []time.Time
	next     int // the load balancer's round robin
	now      func() time.Time
}

// lbNoticeAfter is how long the load balancer keeps sending requests to a
// replica after its death: a health check every couple of seconds.
const lbNoticeAfter = 2 * time.Second

// replicaPlan is the chaos of replicas mode.
type replicaPlan struct {
	kills []replicaKill
	db    *dbRestart
}

func startReplicaFleet(ctx context.Context, u setup, plan replicaPlan) (_ *replicaFleet, err error) {
	f := &replicaFleet{plan: plan, up: make([]bool, u.s.replicas), killedAt: make([]time.Time, u.s.replicas), now: time.Now}
	defer func() {
		if err != nil {
			_ = f.stop()
		}
	}()
	if f.db, err = startDatabase(ctx, filepath.Join(u.dir, "postgres")); err != nil {
		return f, err
	}
	if f.track, err = newFaultTracker(ctx, f.db.dsn, u.s.maxRunners, reconcilerLeaseTTL(u.s.reconcile)); err != nil {
		return f, err
	}
	trackCtx, stopTrack := context.WithCancel(context.WithoutCancel(ctx))
	f.stopTrack = stopTrack
	go f.track.run(trackCtx)
	if f.lb, err = startBalancer(f.pickAPI); err != nil {
		return f, err
	}
	env := append(os.Environ(),
		secretEnv+"="+u.secret, apiTokenEnv+"="+u.apiToken,
		appKeyEnv+"="+string(u.gh.privateKeyPEM),
		instanceTokenKeyEnv+"="+randomHex(),
		dsnEnv+"="+f.db.dsn,
	)
	for i, pem := range u.gh.extraKeysPEM {
		env = append(env, extraAppKeyEnv(i)+"="+string(pem))
	}
	for i := range u.s.replicas {
		name := fmt.Sprintf("r%d", i+1)
		dir := filepath.Join(u.dir, name)
		if err := os.Mkdir(dir, 0o700); err != nil {
			return f, err
		}
		port, err := serveproc.FreeLoopbackPort()
		if err != nil {
			return f, err
		}
		config := filepath.Join(dir, "runfleet.yaml")
		err = writeServeConfig(config, u.s, serveConfig{
			port: port, publicURL: f.lb.url, githubURL: u.gh.baseURL(),
			appKey:      "private_key_env: " + appKeyEnv,
			extraApps:   extraAppsYAML(len(u.gh.extraKeysPEM), func(i int) string { return "private_key_env: " + extraAppKeyEnv(i) }),
			store:       fmt.Sprintf("{kind: postgres, dsn_env: %s}", dsnEnv),
			serverExtra: "  instance_token_key_env: " + instanceTokenKeyEnv + "\n",
			engineExtra: replicaEngineExtra(u.s),
			providerBin: u.s.provider, providerConfig: u.providerConfig,
		})
		if err != nil {
			return f, err
		}
		f.names = append(f.names, name)
		f.replicas = append(f.replicas, newServer(u.s.bin, config, dir, u.s.logLevel, port, env))
	}
	// One after the other: the first start migrates the database.
	for i, srv := range f.replicas {
		if _, err := srv.start(ctx); err != nil {
			return f, fmt.Errorf("replica %s: %w", f.names[i], err)
		}
		f.setUp(i, true)
	}
	return f, nil
}

// setUp marks replica i up (healthy) or down without a kill (stopped).
// extraAppKeyEnv names the variable holding extra App i's key (from 0;
// the App is the (i+2)-th).
func extraAppKeyEnv(i int) string { return fmt.Sprintf("%s_%d", appKeyEnv, i+2) }

func (f *replicaFleet) setUp(i int, up bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.up[i], f.killedAt[i] = up, time.Time{}
}

// pick is the webhook's load balancer: a replica it thinks up, at random.
func (f *replicaFleet) pick(rng *rand.Rand) (target, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	up := routable(f.up, f.killedAt, f.now(), lbNoticeAfter)
	if len(up) == 0 {
		return target{}, false
	}
	i := up[rng.IntN(len(up))]
	return target{url: f.replicas[i].base + "/webhook", replica: i, run: f.replicas[i].current().n}, true
}

func (f *replicaFleet) killed(t target) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return !f.up[t.replica] || f.replicas[t.replica].current().n != t.run
}

func (f *replicaFleet) replicaName(i int) string { return f.names[i] }

// pickAPI is the load balancer's choice for the machines and the
// operator: the replicas it thinks up in turn ("" when none is).
func (f *replicaFleet) pickAPI() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	up := routable(f.up, f.killedAt, f.now(), lbNoticeAfter)
	if len(up) == 0 {
		return ""
	}
	f.next++
	return f.replicas[up[f.next%len(up)]].base
}

func (f *replicaFleet) apiURL() string { return f.lb.url }

func (f *replicaFleet) status() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var parts []string
	for i, name := range f.names {
		state := "down"
		if f.up[i] {
			state = fmt.Sprintf("#%d", f.replicas[i].current().n)
		}
		parts = append(parts, name+" "+state)
	}
	return "replicas " + strings.Join(parts, ", ")
}

// stop stops every replica gracefully, then the load balancer and the
// database.
func (f *replicaFleet) stop() error {
	var errs []error
	for i, srv := range f.replicas {
		f.setUp(i, false)
		if err := srv.stop(); err != nil {
			errs = append(errs, fmt.Errorf("replica %s: %w", f.names[i], err))
		}
	}
	if f.lb != nil {
		f.lb.close()
	}
	if f.track != nil {
		f.stopTrack()
		f.track.close()
		f.track = nil
	}
	if f.db != nil {
		f.db.stop()
	}
	return errors.Join(errs...)
}

func (f *replicaFleet) crashes() []*serveRun {
	var out []*serveRun
	for _, srv := range f.replicas {
		out = append(out, srv.crashes()...)
	}
	return out
}

func (f *replicaFleet) logs() []string {
	var out []string
	for _, srv := range f.replicas {
		out = append(out, srv.logs()...)
	}
	return out
}

// replicaEngineExtra is the replicas' engine.takeover_grace: short, unless
// -defaults.
func replicaEngineExtra(s settings) string {
	if s.defaults {
		return ""
	}
	return fmt.Sprintf("  takeover_grace: %s\n", replicaTakeoverGrace)
}

// reconcilerLeaseTTL is serve's: three reconcile intervals within
// 3 s … 3 min (internal/serve/replica.go).
func reconcilerLeaseTTL(interval time.Duration) time.Duration {
	return min(max(3*interval, 3*time.Second), 3*time.Minute)
}

// faultFigures is what the tracker found so far (nil when not tracking).
func (f *replicaFleet) faultFigures() *faultFigures {
	if f.track == nil {
		return nil
	}
	ff := f.track.figures()
	return &ff
}
