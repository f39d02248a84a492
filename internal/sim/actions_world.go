package sim

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/runfleet/runfleet/internal/github"
	"github.com/runfleet/runfleet/internal/github/scaleset"
	"github.com/runfleet/runfleet/internal/runner"
)

// GitHub's side of a scale set: which jobs are the scale set's, when it
// assigns them to it and to its runners, and what it tells the scale
// set's queue.

// ssPool is the scale-set pool's name in runfleet's configuration.
const ssPool = "scaleset"

// ssJob is what GitHub keeps about a job that targets the scale set
// (runs-on: its name).
type ssJob struct {
	// rr is the job's runner request id; its ledger id is
	// runner.ScaleSetJobID(rr).
	rr int64
	// set is the scale set GitHub assigned the job to, nil until then
	// (and again after that scale set was deleted).
	set *ssScaleSet
	// counted: the job counts in the scale set's totalAssignedJobs;
	// takeable: a runner of the scale set may take it — not while GitHub
	// has taken a canceled assignment back and not yet assigned it again.
	counted, takeable bool
	// cancels is how many assignments GitHub took back (at most three).
	cancels int
	// assignedAt is when GitHub last assigned the job to the scale set:
	// the scaleSetAssignTime of every message about that assignment.
	assignedAt time.Time
}

// ledgerID is the job's id in runfleet's ledger: its REST id, or for a
// scale-set job the one its runner request gives it.
func (j *ghJob) ledgerID() int64 {
	if j.ss != nil {
		return runner.ScaleSetJobID(j.ss.rr)
	}
	return j.ID
}

// newScaleSetJob makes j a job of the scale set.
func (s *actionsService) newScaleSetJob(j *ghJob) {
	s.nextRR += 1 + int64(s.w.rng.IntN(3))
	j.ss = &ssJob{rr: s.nextRR}
	j.Labels = []string{s.cfg.Name}
	j.Pool = ssPool
	s.jobs = append(s.jobs, j)
	s.byLedger[j.ledgerID()] = j
}

func (s *actionsService) ref(j *ghJob) scaleset.JobRef {
	return scaleset.JobRef{
		RunnerRequestID: j.ss.rr, RepositoryName: repoName(j.Repo), OwnerName: j.Org, JobID: fmt.Sprintf("guid-%d", j.ID),
		WorkflowRunID: j.RunID, RequestLabels: append([]string(nil), j.Labels...),
		QueueTime: scaleset.Timestamp{Time: j.QueuedAt}, ScaleSetAssignTime: scaleset.Timestamp{Time: j.ss.assignedAt},
	}
}

// assignToSet hands queued scale-set jobs, oldest first, to the scale set
// while it has room under the capacity its listener last sent, and tells
// its queue (JobAssigned). Some assignments GitHub takes back.
func (s *actionsService) assignToSet() {
	set := s.live()
	if set == nil {
		return
	}
	inUse := 0
	for _, j := range s.jobs {
		if j.ss.set == set && j.ss.counted && j.Status != jobCompleted {
			inUse++
		}
	}
	for _, j := range s.jobs {
		if inUse >= set.capacity {
			return
		}
		if j.Status != jobQueued || j.ss.set != nil {
			continue
		}
		j.ss.set, j.ss.counted, j.ss.takeable, j.ss.assignedAt = set, true, true, s.w.now()
		inUse++
		s.w.tr.add("github: job %d (rr %d) assigned to scale set %d", j.ID, j.ss.rr, set.id)
		s.post(set, &scaleset.JobAssigned{JobRef: s.ref(j)}, "assigned")
		s.maybeTakeBack(j)
		s.maybeCancelAssigned(j)
	}
}

// maybeCancelAssigned is a user canceling a job GitHub assigned to the
// scale set before any runner took it: the JobCompleted (canceled, no
// runner) a taken-back assignment sends too, and nothing after it.
func (s *actionsService) maybeCancelAssigned(j *ghJob) {
	w := s.w
	if !w.faultsOn || !chance(w.rng, s.cfg.Faults.CancelAssigned) {
		return
	}
	w.sched.after(between(w.rng, time.Second, 30*time.Second), 0, func() {
		if j.Status != jobQueued || j.assigned != nil || j.ss.set == nil {
			return
		}
		w.stats.inc("fault.scaleset.assigned_job_canceled")
		w.gh.cancel(j, "cancelled")
	})
}

// maybeTakeBack is GitHub's re-assignment: an assignment no runner took
// within a while is canceled (JobCompleted, canceled, no runner) and made
// again shortly after, up to three times.
func (s *actionsService) maybeTakeBack(j *ghJob) {
	w := s.w
	if !w.faultsOn || j.ss.cancels >= 3 || !chance(w.rng, s.cfg.Faults.Reassign) {
		return
	}
	set := j.ss.set
	w.sched.after(between(w.rng, 5*time.Second, 40*time.Second), 0, func() {
		if j.Status != jobQueued || j.assigned != nil || j.ss.set != set || !j.ss.takeable || set.deleted {
			return
		}
		j.ss.cancels++
		j.ss.takeable = false
		w.stats.inc("fault.scaleset.assignment_canceled")
		w.tr.add("github: job %d (rr %d) assignment canceled (%d), to be assigned again", j.ID, j.ss.rr, j.ss.cancels)
		s.post(set, &scaleset.JobCompleted{JobRef: s.ref(j), Result: scaleset.ResultCanceled}, "assignment_canceled")
		w.sched.after(between(w.rng, time.Second, 20*time.Second), 0, func() {
			if j.Status != jobQueued || j.ss.set != set || set.deleted {
				return
			}
			j.ss.takeable, j.ss.assignedAt = true, w.now()
			w.tr.add("github: job %d (rr %d) assigned to scale set %d again", j.ID, j.ss.rr, set.id)
			s.post(set, &scaleset.JobAssigned{JobRef: s.ref(j)}, "assigned")
			w.gh.assignSoon()
			s.maybeTakeBack(j)
		})
	})
}

// canRun says whether runner r may take job j: a scale set's jobs go to
// its runners only, and its runners take nothing else.
func canRun(r *ghRunner, j *ghJob) bool {
	if j.ss != nil || r.set != nil {
		return j.ss != nil && r.set != nil && j.ss.set == r.set && j.ss.takeable
	}
	return true
}

// started tells the scale set its job started on one of its runners.
func (s *actionsService) started(j *ghJob, r *ghRunner) {
	s.post(r.set, &scaleset.JobStarted{JobRef: s.ref(j), RunnerID: r.ID, RunnerName: r.Name}, "started")
}

// completed tells the scale set its job finished: on its runner, or
// canceled before any runner took it.
func (s *actionsService) completed(j *ghJob) {
	ev := &scaleset.JobCompleted{JobRef: s.ref(j)}
	ev.FinishTime = scaleset.Timestamp{Time: j.CompletedAt}
	switch j.Conclusion {
	case "success":
		ev.Result = scaleset.ResultSucceeded
	case "failure":
		ev.Result = scaleset.ResultFailed
	default:
		ev.Result = scaleset.ResultCanceled
	}
	set := j.ss.set
	if r := j.runner; r != nil {
		ev.RunnerID, ev.RunnerName, set = r.ID, r.Name, r.set
	}
	if set == nil || !j.ss.counted && j.runner == nil {
		return // never assigned to a scale set: it never heard of the job
	}
	if m := s.post(set, ev, "completed"); m != nil {
		m.finished = append(m.finished, j)
	}
	s.w.gh.assignSoon() // the scale set has room for another job
}

// ssRunners registers and removes the scale-set pool's runners through
// the scale set, as *scaleset.Runners does for the engine: the scale set
// is looked up by name once, and again after GitHub deleted it.
type ssRunners struct {
	s  *actionsService
	p  *process
	id int64
}

var _ scaleset.PoolRunners = (*ssRunners)(nil)

func (r *ssRunners) scaleSetID(ctx context.Context) (int64, error) {
	if r.id != 0 {
		return r.id, nil
	}
	if _, err := r.s.call(ctx, r.p, "find_scale_set"); err != nil {
		return 0, err
	}
	set := r.s.live()
	if set == nil {
		return 0, ssError("find scale set", scaleset.ErrScaleSetNotFound, 404)
	}
	r.id = set.id
	return r.id, nil
}

// GenerateJITConfig registers req.Name in the scale set; a name held by
// an idle runner is cleared and registered again, a busy holder is
// github.ErrRunnerNameTaken.
func (r *ssRunners) GenerateJITConfig(ctx context.Context, req github.JITRequest) (*github.JITConfig, error) {
	s, g := r.s, r.s.w.gh
	id, err := r.scaleSetID(ctx)
	if err != nil {
		return nil, err
	}
	g.charge(jobOfInstance(req.Name), "ss_generate_jit")
	after, err := s.call(ctx, r.p, "generate_jit")
	var made *ghRunner
	register := func() error {
		set := s.setByID(id)
		if set == nil {
			r.id = 0
			return ssError("generate jit config", scaleset.ErrScaleSetNotFound, 404)
		}
		if stale := g.registeredByName(req.Name); stale != nil {
			if stale.foreign || stale.busy() {
				return fmt.Errorf("%w: %q in scale set %s", github.ErrRunnerNameTaken, req.Name, set.name)
			}
			g.charge(jobOfInstance(req.Name), "ss_remove_runner")
			g.deregister(stale)
		}
		made = g.register(req.Name, org, set.labels, false, true)
		made.set = set
		return nil
	}
	if err != nil {
		return nil, s.died(err, func() { _ = register() })
	}
	if err := register(); err != nil {
		s.w.tr.add("actions generate_jit %s -> %v", req.Name, err)
		return nil, err
	}
	s.w.tr.add("actions generate_jit %s -> runner %d in scale set %d", req.Name, made.ID, id)
	if err := s.afterEffect("generate_jit", after); err != nil {
		return nil, err
	}
	return &github.JITConfig{RunnerID: made.ID, EncodedJITConfig: "jit-ss-" + strconv.FormatInt(made.ID, 10)}, nil
}

// RemoveRunner deregisters a runner by id, else by name; gone is success,
// busy is the busy guard (scaleset.ErrRunnerBusy).
func (r *ssRunners) RemoveRunner(ctx context.Context, ref github.RunnerRef) error {
	s, g := r.s, r.s.w.gh
	name := ref.Name
	if x := g.byID[ref.ID]; x != nil {
		name = x.Name
	}
	g.charge(jobOfInstance(name), "ss_remove_runner")
	after, err := s.call(ctx, r.p, "remove_runner")
	remove := func() error {
		var x *ghRunner
		if ref.ID != 0 {
			if y := g.byID[ref.ID]; y != nil && y.registered {
				x = y
			}
		} else {
			x = g.registeredByName(ref.Name)
		}
		switch {
		case x == nil:
			return nil
		case x.foreign:
			s.w.violate("never touch a runner runfleet does not own", "runfleet removed runner %s (id %d), which it did not register", x.Name, x.ID)
		case x.busy():
			s.w.tr.add("actions remove_runner %s (id %d) -> busy (job %d)", x.Name, x.ID, x.job.ID)
			return ssError("remove runner "+x.Name, scaleset.ErrRunnerBusy, 400)
		}
		g.deregister(x)
		s.w.tr.add("actions remove_runner %s (id %d) -> removed", x.Name, x.ID)
		return nil
	}
	if err != nil {
		return s.died(err, func() { _ = remove() })
	}
	if err := remove(); err != nil {
		return err
	}
	return s.afterEffect("remove_runner", after)
}

// routedPort is the engine's GitHub port in a world with a scale set, as
// wiring.ScaleSets builds it: the scale-set pool's runners through the
// scale set (the real scaleset.RoutedGitHub), the rest through REST, and
// the App's delivery log as before.
type routedPort struct {
	scaleset.RoutedGitHub
	github.DeliveryLog
}

func (w *world) routeScaleSet(p *process, gh github.GitHub) github.GitHub {
	if w.actions == nil {
		return gh
	}
	routed := scaleset.RoutedGitHub{GitHub: gh, ByPool: map[string]scaleset.PoolRunners{
		ssPool: &ssRunners{s: w.actions, p: p},
	}}
	if log, ok := gh.(github.DeliveryLog); ok {
		return routedPort{RoutedGitHub: routed, DeliveryLog: log}
	}
	return routed
}

// ssPoolOf is the scale-set pool runfleet serves, beside the webhook ones.
func ssPoolOf(cfg ScaleSetConfig) runner.Pool {
	return runner.Pool{Name: ssPool, Owner: runner.Owner{Org: org}, Labels: []string{"linux", "x64"}, MaxRunners: cfg.MaxRunners,
		ScaleSet: cfg.Name, BootstrapTimeout: bootstrapTimeout, ProviderTimeout: providerTimeout}
}

// repoName is a repository's own name, as a scale-set message gives it
// (the owner's login apart, in ownerName).
func repoName(fullName string) string {
	_, name, _ := strings.Cut(fullName, "/")
	return name
}
