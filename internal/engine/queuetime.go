package engine

import (
	"context"
	"sync"
	"time"

	"github.com/runfleet/runfleet/internal/runner"
)

// jobWaited tells the observer how long the job inst was made for had
// waited when inst reached stage. The job's queued time lives on its
// ledger record; an instance this process admitted has it remembered
// (queuedTimes), any other costs one read. Nothing is read when nobody
// listens, for warm instances (no job), or for jobs the ledger no longer
// holds. A job served by several instances in turn (its first one failed)
// reports a stage once per instance that reached it.
func (in *Intake) jobWaited(ctx context.Context, inst *runner.Instance, stage QueueStage) {
	if _, nop := in.observer.(NopObserver); nop || inst == nil || inst.JobID == 0 {
		return
	}
	// Online is the last stage that needs the remembered time: started
	// comes with the job itself.
	queuedAt, ok := in.queued.lookup(inst.Name, stage == StageOnline)
	pool := inst.Pool
	if !ok {
		job, err := in.store.GetJob(ctx, runner.JobKey(inst.JobID, inst.RunAttempt))
		if err != nil {
			return
		}
		queuedAt, pool = job.QueuedAt, job.Pool
	}
	if queuedAt.IsZero() {
		return
	}
	in.observer.JobWaited(pool, stage, in.now().Sub(queuedAt))
}

// rememberQueued keeps the queued time of the job an admitted instance
// serves, so that its created and online stages need no read of the
// ledger when they happen in this process (always in serve; on Lambda the
// worker and the metadata function are other processes, which read).
func (in *Intake) rememberQueued(inst *runner.Instance, job *runner.Job) {
	if _, nop := in.observer.(NopObserver); nop || job == nil {
		return
	}
	in.queued.remember(inst.Name, job.QueuedAt)
}

// maxQueuedTimes bounds queuedTimes: far more than the instances one
// process creates between admission and online, so a miss is rare and
// costs only a read.
const maxQueuedTimes = 4096

// queuedTimes maps instance names to their job's queued time, the oldest
// entry forgotten first. A job's queued time never changes, and an
// instance name is never reused, so an entry is never stale. It grows with
// use: an intake made per Lambda invocation holds one entry or none.
type queuedTimes struct {
	mu    sync.Mutex
	at    map[string]time.Time
	order []string // insertion order; a ring once full
	next  int
}

func (q *queuedTimes) remember(name string, at time.Time) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.at == nil {
		q.at = map[string]time.Time{}
	}
	if len(q.order) < maxQueuedTimes {
		q.order = append(q.order, name)
	} else {
		delete(q.at, q.order[q.next])
		q.order[q.next] = name
		q.next = (q.next + 1) % maxQueuedTimes
	}
	q.at[name] = at
}

func (q *queuedTimes) lookup(name string, forget bool) (time.Time, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	at, ok := q.at[name]
	if ok && forget {
		delete(q.at, name)
	}
	return at, ok
}
