package listener_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/runfleet/runfleet/internal/enginetest"
	"github.com/runfleet/runfleet/internal/github"
	"github.com/runfleet/runfleet/internal/github/scaleset"
	"github.com/runfleet/runfleet/internal/github/scaleset/scalesettest"
	ghsim "github.com/runfleet/runfleet/internal/github/simulated"
	"github.com/runfleet/runfleet/internal/listener"
	"github.com/runfleet/runfleet/internal/runner"
	"github.com/runfleet/runfleet/internal/store"
)

// scaleSetName is the test pool's scale set.
const scaleSetName = "linux-scale"

// statsGrace is the listeners' StatsGrace: short, so that a test sees a
// job GitHub canceled for good closed, and long enough that every
// re-assignment the tests play lands well within it.
const statsGrace = 300 * time.Millisecond

// rig is a real engine world fed by a listener from the fake Actions
// service: the listener's lease and state in the world's store, its
// events into the world's engine, the world's workers making runners.
type rig struct {
	t      *testing.T
	w      *enginetest.World
	fake   *scalesettest.Server
	client *scaleset.Client
	ctx    context.Context
	setID  int64

	// keepSession starts listeners that leave their session open when
	// they stop (Options.KeepSession), as the Lambda function's do.
	keepSession bool
	// grace, when set, replaces statsGrace for the listeners started next.
	grace time.Duration
	// observer, when set, hears the listeners started next.
	observer listener.Observer

	mu      sync.Mutex
	running map[string]*running // by holder
}

// running is one listener started by the rig.
type running struct {
	l      *listener.Listener
	cancel context.CancelFunc
	done   chan struct{}
}

func newRig(t *testing.T, opts scalesettest.Options) *rig {
	t.Helper()
	if opts.PollWindow == 0 {
		opts.PollWindow = 50 * time.Millisecond
	}
	fake := scalesettest.New(t, opts)
	r := &rig{t: t, fake: fake, client: fake.Client(t), ctx: context.Background(), running: map[string]*running{}}
	set, err := r.client.EnsureScaleSet(r.ctx, "", scaleset.ScaleSetSpec{Name: scaleSetName, Labels: pool().Labels})
	if err != nil {
		t.Fatal(err)
	}
	r.setID = set.ID
	// The pool's runners register through the scale set, as the wiring
	// routes a scale-set pool's; everything else is the simulated GitHub.
	r.w = enginetest.NewWorld(t, enginetest.Options{GitHub: func(*slog.Logger) github.GitHub {
		return scaleset.RoutedGitHub{GitHub: ghsim.New(), ByPool: map[string]scaleset.PoolRunners{
			pool().Name: &scaleset.Runners{Client: r.client, Name: scaleSetName},
		}}
	}})
	w := r.w
	w.StartWorkers(2)
	t.Cleanup(func() {
		r.stopAll()
		w.StopWorkers()
	})
	return r
}

// pool is the world's pool, fed by the scale set.
func pool() runner.Pool { return enginetest.OnePool(nil)[0] }

// start runs a listener as holder until stop or the test's end.
func (r *rig) start(holder string) *listener.Listener {
	r.t.Helper()
	grace := statsGrace
	if r.grace > 0 {
		grace = r.grace
	}
	l, err := listener.New(listener.Options{
		Pool: pool(), ScaleSet: scaleSetName, Client: listener.ScaleSetClient(r.client), Intake: r.w.Engine, Store: r.w.Store,
		Holder: holder, ControllerID: "ctl", LeaseTTL: time.Second, BackoffMin: 20 * time.Millisecond, BackoffMax: 200 * time.Millisecond, StatsGrace: grace,
		KeepSession: r.keepSession, Observer: r.observer,
		Logger: r.w.Logs.Logger(slog.LevelDebug).With("listener", holder),
	})
	if err != nil {
		r.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	run := &running{l: l, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(run.done)
		if err := l.Run(ctx); err != nil {
			r.t.Errorf("listener %s: %v", holder, err)
		}
	}()
	r.mu.Lock()
	r.running[holder] = run
	r.mu.Unlock()
	return l
}

// stop ends holder's listener the orderly way and waits for it.
func (r *rig) stop(holder string) {
	r.mu.Lock()
	run := r.running[holder]
	delete(r.running, holder)
	r.mu.Unlock()
	if run != nil {
		run.cancel()
		<-run.done
	}
}

func (r *rig) stopAll() {
	r.mu.Lock()
	var holders []string
	for h := range r.running {
		holders = append(holders, h)
	}
	r.mu.Unlock()
	for _, h := range holders {
		r.stop(h)
	}
}

// state is the listener state stored for the pool.
func (r *rig) state() (scaleSetID int64, sessionID string, last int64) {
	c, err := r.w.Store.GetCursor(r.ctx, "scaleset/"+pool().Name)
	if err != nil {
		r.t.Fatal(err)
	}
	var st struct {
		ScaleSetID    int64  `json:"scale_set_id"`
		SessionID     string `json:"session_id"`
		LastMessageID int64  `json:"last_message_id"`
	}
	if c.Value != "" {
		if err := json.Unmarshal([]byte(c.Value), &st); err != nil {
			r.t.Fatal(err)
		}
	}
	return st.ScaleSetID, st.SessionID, st.LastMessageID
}

// instanceFor is the instance the engine makes for a scale-set job.
func instanceFor(requestID int64) string {
	return runner.InstanceName(pool().Name, runner.ScaleSetJobID(requestID), 1)
}

// job reads the ledger record of a scale-set job, nil if none.
func (r *rig) job(requestID int64) *runner.Job {
	j, err := r.w.Store.GetJob(r.ctx, runner.JobKey(runner.ScaleSetJobID(requestID), 1))
	if errors.Is(err, store.ErrJobNotFound) {
		return nil
	}
	if err != nil {
		r.t.Fatal(err)
	}
	return j
}

// queue queues a job in the scale set and returns its runner request id.
func (r *rig) queue() int64 {
	return r.fake.QueueJob(r.setID, scalesettest.JobSpec{Repository: "octo-org/hello-world", Labels: []string{scaleSetName}, WorkflowRunID: 7})
}

// runJob plays GitHub's side once the job's runner is up (registered in
// the scale set by the engine's create): the runner takes the job and
// finishes it.
func (r *rig) runJob(requestID int64) {
	r.t.Helper()
	name := instanceFor(requestID)
	r.w.WaitStatus(name, runner.StatusRunning)
	if err := r.fake.StartJob(requestID, name); err != nil {
		r.t.Fatal(err)
	}
	r.waitJob(requestID, runner.JobServed)
	if err := r.fake.CompleteJob(requestID, scaleset.ResultSucceeded); err != nil {
		r.t.Fatal(err)
	}
	r.waitJob(requestID, runner.JobClosed)
}

// waitJob waits for a scale-set job to reach status in the ledger.
func (r *rig) waitJob(requestID int64, status runner.JobStatus) {
	r.t.Helper()
	r.w.WaitFor("job of runner request "+strconv.FormatInt(requestID, 10)+" "+string(status), func() bool {
		j := r.job(requestID)
		return j != nil && j.Status == status
	})
}

// creates counts the creates the engine asked of the provider for name.
func (r *rig) creates(name string) int {
	n := 0
	for _, c := range r.w.Recorder.Calls() {
		if c == "create "+name {
			n++
		}
	}
	return n
}

// drained waits until the scale set's queue holds nothing unacknowledged.
func (r *rig) drained() {
	r.t.Helper()
	r.w.WaitFor("every message acknowledged", func() bool { return r.fake.Unacknowledged(r.setID) == 0 })
}

// saveState stores the state a dead listener left: the scale set and its
// session.
func saveState(r *rig, session string) {
	r.t.Helper()
	cur, err := r.w.Store.GetCursor(r.ctx, "scaleset/"+pool().Name)
	if err != nil {
		r.t.Fatal(err)
	}
	b, _ := json.Marshal(map[string]any{"scale_set_id": r.setID, "session_id": session})
	cur.Value = string(b)
	if err := r.w.Store.PutCursor(r.ctx, cur); err != nil {
		r.t.Fatal(err)
	}
}
