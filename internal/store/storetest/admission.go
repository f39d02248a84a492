package storetest

import (
	"context"
	"errors"
	"testing"

	"github.com/runfleet/runfleet/internal/runner"
	"github.com/runfleet/runfleet/internal/store"
)

// admissionTests pin down the one atomic write behind every runner made
// for a job: the instance, its pool slot and the job's next version commit
// together or not at all.
var admissionTests = []contractTest{
	{"Admission/CreatesJob", admissionCreatesJob},
	{"Admission/AdvancesJob", admissionAdvancesJob},
	{"Admission/PoolFullWritesNeither", admissionPoolFullWritesNeither},
	{"Admission/JobConflictWritesNoInstance", admissionJobConflictWritesNoInstance},
	{"Admission/MissingJobIsConflict", admissionMissingJobIsConflict},
	{"Admission/InstanceExistsWritesNoJob", admissionInstanceExistsWritesNoJob},
	{"Admission/JobExistsWritesNothing", admissionJobExistsWritesNothing},
	{"Admission/IllegalJobTransitionWritesNothing", admissionIllegalJobTransitionWritesNothing},
	{"Admission/ReplacementAfterInstanceEnded", admissionReplacementAfterInstanceEnded},
}

// requireNothingAdmitted checks a refused admission left the caller's
// structs as they were and wrote no instance and no slot.
func requireNothingAdmitted(t *testing.T, s store.Store, a store.Admission, jobVersion int64, usage int) {
	t.Helper()
	if a.Instance.Version != 0 {
		t.Fatalf("refused admission changed the instance's Version to %d", a.Instance.Version)
	}
	if a.Job != nil && a.Job.Version != jobVersion {
		t.Fatalf("refused admission changed the job's Version from %d to %d", jobVersion, a.Job.Version)
	}
	requireNotFound(t, s, a.Instance.Name)
	requireUsage(t, s, a.Instance.Pool, usage)
}

// An intake that can make the runner at once records the job and its first
// instance in one write.
func admissionCreatesJob(t *testing.T, s store.Store) {
	j := newJob("p", 1)
	j.Made = 1
	j.Instance = j.InstanceFor(1)
	inst := newInstance("p", 1)
	a := store.Admission{Instance: inst, MaxRunners: roomy, Job: j}
	if err := s.CreateInstance(context.Background(), a); err != nil {
		t.Fatalf("CreateInstance with a new job: %v", err)
	}
	if inst.Version != 1 || j.Version != 1 {
		t.Fatalf("Versions after admission: instance %d, job %d; want 1 and 1", inst.Version, j.Version)
	}
	requireSameInstance(t, inst, mustGet(t, s, inst.Name))
	requireSameJob(t, j, mustGetJob(t, s, j.Key()))
	requireUsage(t, s, "p", 1)
}

func admissionAdvancesJob(t *testing.T, s store.Store) {
	j := newJob("p", 1)
	mustCreateJob(t, s, j)
	inst, next := nextInstanceFor(mustGetJob(t, s, j.Key()))
	a := store.Admission{Instance: inst, MaxRunners: roomy, Job: next, JobFrom: runner.JobOpen}
	if err := s.CreateInstance(context.Background(), a); err != nil {
		t.Fatalf("CreateInstance with a job compare-and-set: %v", err)
	}
	if inst.Version != 1 || next.Version != 2 {
		t.Fatalf("Versions after admission: instance %d, job %d; want 1 and 2", inst.Version, next.Version)
	}
	got := mustGetJob(t, s, j.Key())
	requireSameJob(t, next, got)
	if got.Instance != inst.Name || got.Made != 1 {
		t.Fatalf("stored job names instance %q (made %d), want %q (made 1)", got.Instance, got.Made, inst.Name)
	}
	requireSameInstance(t, inst, mustGet(t, s, inst.Name))
	requireUsage(t, s, "p", 1)
}

func admissionPoolFullWritesNeither(t *testing.T, s store.Store) {
	ctx := context.Background()
	mustCreate(t, s, newInstance("p", 99), 1)

	// A new job: neither the instance nor the job is written.
	fresh := newJob("p", 1)
	fresh.Made, fresh.Instance = 1, fresh.InstanceFor(1)
	a := store.Admission{Instance: newInstance("p", 1), MaxRunners: 1, Job: fresh}
	if err := s.CreateInstance(ctx, a); !errors.Is(err, store.ErrPoolFull) {
		t.Fatalf("admission creating a job into a full pool: got %v, want ErrPoolFull", err)
	}
	requireNothingAdmitted(t, s, a, 0, 1)
	requireJobNotFound(t, s, fresh.Key())

	// A recorded job: it stays at the version read.
	j := newJob("p", 2)
	mustCreateJob(t, s, j)
	inst, next := nextInstanceFor(j)
	a = store.Admission{Instance: inst, MaxRunners: 1, Job: next, JobFrom: runner.JobOpen}
	if err := s.CreateInstance(ctx, a); !errors.Is(err, store.ErrPoolFull) {
		t.Fatalf("admission advancing a job into a full pool: got %v, want ErrPoolFull", err)
	}
	requireNothingAdmitted(t, s, a, 1, 1)
	requireSameJob(t, j, mustGetJob(t, s, j.Key()))
}

// An admission prepared from a job that has moved on since (another worker
// admitted its instance, or the job was served) makes no runner and takes
// no slot.
func admissionJobConflictWritesNoInstance(t *testing.T, s store.Store) {
	ctx := context.Background()
	j := newJob("p", 1)
	mustCreateJob(t, s, j)
	stale := mustGetJob(t, s, j.Key())
	moved := mustMoveJob(t, s, j.Key(), runner.JobWaiting, runner.JobOpen)

	inst, next := nextInstanceFor(stale)
	a := store.Admission{Instance: inst, MaxRunners: roomy, Job: next, JobFrom: runner.JobOpen}
	requireConflict(t, s.CreateInstance(ctx, a), store.KindJob, j.Key(), runner.JobOpen, 1)
	requireNothingAdmitted(t, s, a, 1, 0)
	requireSameJob(t, moved, mustGetJob(t, s, j.Key()))

	// Right version, wrong status.
	waiting := mustMoveJob(t, s, j.Key(), runner.JobWaiting)
	inst, next = nextInstanceFor(waiting)
	next.Status = runner.JobOpen
	a = store.Admission{Instance: inst, MaxRunners: roomy, Job: next, JobFrom: runner.JobOpen}
	requireConflict(t, s.CreateInstance(ctx, a), store.KindJob, j.Key(), runner.JobOpen, waiting.Version)
	requireNothingAdmitted(t, s, a, waiting.Version, 0)
	requireSameJob(t, waiting, mustGetJob(t, s, j.Key()))
}

func admissionMissingJobIsConflict(t *testing.T, s store.Store) {
	ghost := newJob("p", 1)
	ghost.Version = 1
	inst, next := nextInstanceFor(ghost)
	a := store.Admission{Instance: inst, MaxRunners: roomy, Job: next, JobFrom: runner.JobOpen}
	requireConflict(t, s.CreateInstance(context.Background(), a), store.KindJob, ghost.Key(), runner.JobOpen, 1)
	requireNothingAdmitted(t, s, a, 1, 0)
	requireJobNotFound(t, s, ghost.Key())
}

func admissionInstanceExistsWritesNoJob(t *testing.T, s store.Store) {
	ctx := context.Background()
	existing := newInstance("p", 1)
	mustCreate(t, s, existing, roomy)

	// A new job: not recorded.
	fresh := newJob("p", 1)
	fresh.Made, fresh.Instance = 1, existing.Name
	a := store.Admission{Instance: newInstance("p", 1), MaxRunners: roomy, Job: fresh}
	if err := s.CreateInstance(ctx, a); !errors.Is(err, store.ErrAlreadyExists) {
		t.Fatalf("admission of a taken name with a new job: got %v, want ErrAlreadyExists", err)
	}
	if a.Instance.Version != 0 || fresh.Version != 0 {
		t.Fatalf("refused admission changed Versions: instance %d, job %d", a.Instance.Version, fresh.Version)
	}
	requireJobNotFound(t, s, fresh.Key())

	// A recorded job: unchanged.
	j := newJob("p", 2)
	mustCreateJob(t, s, j)
	_, next := nextInstanceFor(j)
	a = store.Admission{Instance: newInstance("p", 1), MaxRunners: roomy, Job: next, JobFrom: runner.JobOpen}
	if err := s.CreateInstance(ctx, a); !errors.Is(err, store.ErrAlreadyExists) {
		t.Fatalf("admission of a taken name advancing a job: got %v, want ErrAlreadyExists", err)
	}
	if next.Version != 1 {
		t.Fatalf("refused admission changed the job's Version to %d", next.Version)
	}
	requireSameJob(t, j, mustGetJob(t, s, j.Key()))
	requireSameInstance(t, existing, mustGet(t, s, existing.Name))
	requireUsage(t, s, "p", 1)
}

func admissionJobExistsWritesNothing(t *testing.T, s store.Store) {
	j := newJob("p", 1)
	mustCreateJob(t, s, j)

	again := newJob("p", 1)
	again.Made, again.Instance = 1, again.InstanceFor(1)
	a := store.Admission{Instance: newInstance("p", 1), MaxRunners: roomy, Job: again}
	if err := s.CreateInstance(context.Background(), a); !errors.Is(err, store.ErrJobExists) {
		t.Fatalf("admission creating a recorded job: got %v, want ErrJobExists", err)
	}
	requireNothingAdmitted(t, s, a, 0, 0)
	requireSameJob(t, j, mustGetJob(t, s, j.Key()))
}

func admissionIllegalJobTransitionWritesNothing(t *testing.T, s store.Store) {
	j := newJob("p", 1)
	mustCreateJob(t, s, j)
	served := mustMoveJob(t, s, j.Key(), runner.JobServed)

	inst, next := nextInstanceFor(served)
	next.Status = runner.JobOpen
	a := store.Admission{Instance: inst, MaxRunners: roomy, Job: next, JobFrom: runner.JobServed}
	var ite *runner.IllegalTransitionError
	if err := s.CreateInstance(context.Background(), a); !errors.As(err, &ite) {
		t.Fatalf("admission reopening a served job: got %v, want *runner.IllegalTransitionError", err)
	}
	requireNothingAdmitted(t, s, a, served.Version, 0)
	requireSameJob(t, served, mustGetJob(t, s, j.Key()))
}

// When the instance made for a job ends while the job is still queued, the
// next one is admitted under its own name: the first's deleted record still
// blocks the first name, and the job counts both.
func admissionReplacementAfterInstanceEnded(t *testing.T, s store.Store) {
	ctx := context.Background()
	j := newJob("p", 1)
	mustCreateJob(t, s, j)
	first, next := nextInstanceFor(j)
	if err := s.CreateInstance(ctx, store.Admission{Instance: first, MaxRunners: 1, Job: next, JobFrom: runner.JobOpen}); err != nil {
		t.Fatal(err)
	}
	mustMove(t, s, first.Name, runner.StatusCreating, runner.StatusError, runner.StatusPendingDelete, runner.StatusDeleting, runner.StatusDeleted)
	ended := next.Clone()
	ended.Instance = ""
	if err := s.UpdateJob(ctx, runner.JobOpen, ended); err != nil {
		t.Fatal(err)
	}

	second, replacement := nextInstanceFor(ended)
	if second.Name == first.Name {
		t.Fatalf("replacement reuses the name %s", first.Name)
	}
	if err := s.CreateInstance(ctx, store.Admission{Instance: second, MaxRunners: 1, Job: replacement, JobFrom: runner.JobOpen}); err != nil {
		t.Fatalf("admitting the replacement: %v", err)
	}
	got := mustGetJob(t, s, j.Key())
	if got.Made != 2 || got.Instance != second.Name || got.Version != 4 {
		t.Fatalf("job after the replacement: made %d, instance %q, version %d; want 2, %q, 4", got.Made, got.Instance, got.Version, second.Name)
	}
	requireUsage(t, s, "p", 1)
}
