package sim

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/runfleet/runfleet/internal/queue"
	"github.com/runfleet/runfleet/internal/runner"
	"github.com/runfleet/runfleet/internal/store"
)

// storePort wraps the real store of one process. Every call is a point
// where another task may run first; every write is a point where the
// process may die, before the write or right after it is durable.
// Methods the port gains later pass through unwrapped (embedding), so the
// simulation still builds, but are neither interleaved nor crash points
// until they are listed here.
type storePort struct {
	store.Store
	p *process
}

// outboxPort is a storePort over a store that keeps the queue in its own
// writes (bolt): it is a store.Outbox too, as the store it wraps is.
type outboxPort struct {
	*storePort
	outbox store.Outbox
}

var (
	_ store.Store    = (*storePort)(nil)
	_ store.Outbox   = (*outboxPort)(nil)
	_ store.Arrivals = (*storePort)(nil)
)

// wrapStore returns the process's store: an outboxPort when the real
// store is an outbox, so the engine takes the same path it does in
// production.
func wrapStore(real store.Store, p *process) (store.Store, *storePort) {
	sp := &storePort{Store: real, p: p}
	if ob, ok := real.(store.Outbox); ok {
		return &outboxPort{storePort: sp, outbox: ob}, sp
	}
	return sp, sp
}

// read is every store read's turn; during an outage it fails.
func (s *storePort) read(ctx context.Context) error {
	if err := s.p.enter(ctx); err != nil {
		return err
	}
	if s.p.w.storeDown() {
		return errStoreDown
	}
	return nil
}

// write runs one store write with its crash point. instances says the
// write may change instances, which the safety checks then re-read.
func (s *storePort) write(ctx context.Context, what string, instances bool, fn func() error) error {
	return s.writeNoting(ctx, what, instances, nil, fn)
}

// writeInstance is write for a write that leaves instance name in status
// when it takes effect: the task making it is then at that instance's
// work (deadwork.go).
func (s *storePort) writeInstance(ctx context.Context, what, name string, from, to runner.Status, claim string, fn func() error) error {
	return s.writeNoting(ctx, what, true, func() { s.p.w.wroteInstance(name, from, to, claim) }, fn)
}

// writeNoting is write, calling took once the write has taken effect,
// whatever the caller is told.
func (s *storePort) writeNoting(ctx context.Context, what string, instances bool, took func(), fn func() error) error {
	p := s.p
	w := p.w
	if err := p.enter(ctx); err != nil {
		return err
	}
	tookEffect := func() {
		if instances {
			w.storeDirty = true
		}
		if took != nil {
			took()
		}
	}
	if w.storeDown() {
		if w.outageWrite(what, fn) {
			tookEffect()
		}
		return errStoreDown
	}
	when := p.crashPoint()
	if when == crashBefore {
		p.die("before store write " + what)
		return errKilled
	}
	err := fn()
	if err == nil {
		tookEffect()
	}
	if when == crashAfter {
		p.die("after store write " + what + result(err))
		return errKilled
	}
	w.tr.add("store %s%s", what, result(err))
	return err
}

func result(err error) string {
	if err != nil {
		return ": " + err.Error()
	}
	return ": ok"
}

func (s *storePort) CreateInstance(ctx context.Context, a store.Admission) error {
	return s.writeInstance(ctx, describeAdmission("create_instance", a), a.Instance.Name, "", a.Instance.Status, a.Instance.Claim, func() error { return s.Store.CreateInstance(ctx, a) })
}

func (s *outboxPort) CreateInstanceAndSend(ctx context.Context, a store.Admission, body []byte) error {
	err := s.writeInstance(ctx, describeAdmission("create_instance_and_send", a), a.Instance.Name, "", a.Instance.Status, a.Instance.Claim, func() error { return s.outbox.CreateInstanceAndSend(ctx, a, body) })
	if err == nil || errors.Is(err, errStoreDown) {
		s.p.w.wakeAt(s.p, s.p.w.now())
	}
	return err
}

func describeAdmission(op string, a store.Admission) string {
	what := op + " " + a.Instance.Name + " " + string(a.Instance.Status)
	if a.Job != nil {
		what += " job " + a.Job.Key() + " " + string(a.JobFrom) + "->" + string(a.Job.Status)
	}
	return what
}

func (s *storePort) UpdateInstance(ctx context.Context, from runner.Status, next *runner.Instance) error {
	s.p.w.gh.checkBudgetWait(ctx, s.Store, from, next)
	return s.writeInstance(ctx, "update_instance "+next.Name+" "+string(from)+"->"+string(next.Status), next.Name, from, next.Status, next.Claim, func() error { return s.Store.UpdateInstance(ctx, from, next) })
}

func (s *storePort) GetInstance(ctx context.Context, name string) (*runner.Instance, error) {
	if err := s.read(ctx); err != nil {
		return nil, err
	}
	return s.Store.GetInstance(ctx, name)
}

func (s *storePort) ListInstancesByPool(ctx context.Context, pool string) ([]*runner.Instance, error) {
	if err := s.read(ctx); err != nil {
		return nil, err
	}
	return s.Store.ListInstancesByPool(ctx, pool)
}

func (s *storePort) ListLiveInstances(ctx context.Context) ([]*runner.Instance, error) {
	if err := s.read(ctx); err != nil {
		return nil, err
	}
	return s.Store.ListLiveInstances(ctx)
}

func (s *storePort) PoolUsage(ctx context.Context, pool string) (int, error) {
	if err := s.read(ctx); err != nil {
		return 0, err
	}
	return s.Store.PoolUsage(ctx, pool)
}

func (s *storePort) CreateJob(ctx context.Context, job *runner.Job) error {
	return s.write(ctx, "create_job "+job.Key()+" "+string(job.Status), false, func() error { return s.Store.CreateJob(ctx, job) })
}

func (s *storePort) UpdateJob(ctx context.Context, from runner.JobStatus, next *runner.Job) error {
	return s.write(ctx, "update_job "+next.Key()+" "+string(from)+"->"+string(next.Status)+" instance="+next.Instance, false, func() error { return s.Store.UpdateJob(ctx, from, next) })
}

func (s *storePort) GetJob(ctx context.Context, key string) (*runner.Job, error) {
	if err := s.read(ctx); err != nil {
		return nil, err
	}
	return s.Store.GetJob(ctx, key)
}

func (s *storePort) ListOpenJobs(ctx context.Context) ([]*runner.Job, error) {
	if err := s.read(ctx); err != nil {
		return nil, err
	}
	return s.Store.ListOpenJobs(ctx)
}

// ListArrivals passes store.Arrivals through as a read point; a store
// without it answers errors.ErrUnsupported, which the engine reads as
// the store not having the capability.
func (s *storePort) ListArrivals(ctx context.Context, pools []string, since time.Time) (map[string][]time.Time, error) {
	src, ok := s.Store.(store.Arrivals)
	if !ok {
		return nil, fmt.Errorf("sim: %T cannot list arrivals: %w", s.Store, errors.ErrUnsupported)
	}
	if err := s.read(ctx); err != nil {
		return nil, err
	}
	return src.ListArrivals(ctx, pools, since)
}

func (s *storePort) PutRunnerCredentials(ctx context.Context, c store.RunnerCredentials, ttl time.Duration) error {
	return s.write(ctx, "put_credentials "+c.Instance, false, func() error { return s.Store.PutRunnerCredentials(ctx, c, ttl) })
}

func (s *storePort) GetRunnerCredentials(ctx context.Context, instance string) (*store.RunnerCredentials, error) {
	if err := s.read(ctx); err != nil {
		return nil, err
	}
	return s.Store.GetRunnerCredentials(ctx, instance)
}

func (s *storePort) DeleteRunnerCredentials(ctx context.Context, instance string) error {
	return s.write(ctx, "delete_credentials "+instance, false, func() error { return s.Store.DeleteRunnerCredentials(ctx, instance) })
}

func (s *storePort) GetSpotBreaker(ctx context.Context, pool string) (*runner.SpotBreaker, error) {
	if err := s.read(ctx); err != nil {
		return nil, err
	}
	return s.Store.GetSpotBreaker(ctx, pool)
}

// PutSpotBreaker also notes when a write opened the pool's breaker, for
// the on-demand check (spot_breaker.go).
func (s *storePort) PutSpotBreaker(ctx context.Context, next *runner.SpotBreaker) error {
	w := s.p.w
	return s.write(ctx, "put_spot_breaker "+next.Pool, false, func() error {
		before, _ := s.Store.GetSpotBreaker(ctx, next.Pool)
		err := s.Store.PutSpotBreaker(ctx, next)
		if err == nil {
			w.breakerWritten(before, next)
		}
		return err
	})
}

func (s *storePort) InstallationID(ctx context.Context) (string, error) {
	if err := s.read(ctx); err != nil {
		return "", err
	}
	return s.Store.InstallationID(ctx)
}

// queuePort wraps the real queue of one process, with the same turns and
// crash points; it also wakes idle workers when a message becomes
// visible, as a blocked long-poll would be woken.
type queuePort struct {
	queue.Queue
	p *process
}

var _ queue.Queue = (*queuePort)(nil)

func (q *queuePort) write(ctx context.Context, what string, fn func() error) error {
	p := q.p
	if err := p.enter(ctx); err != nil {
		return err
	}
	if p.w.storeDown() {
		p.w.outageWrite("queue "+what, fn)
		return errStoreDown
	}
	when := p.crashPoint()
	if when == crashBefore {
		p.die("before queue " + what)
		return errKilled
	}
	err := fn()
	if when == crashAfter {
		p.die("after queue " + what + result(err))
		return errKilled
	}
	return err
}

func (q *queuePort) Send(ctx context.Context, body []byte, delay time.Duration) error {
	w := q.p.w
	if w.backend.RealTime() && delay > 0 {
		// SQS counts delays in real seconds; the simulation keeps them on
		// the virtual clock instead, holding the message as SQS would (it
		// survives the process) and handing it over when it is due.
		err := q.write(ctx, "send", func() error { return nil })
		if err == nil {
			w.tr.add("queue send %s after %s (held on the virtual clock)", body, delay)
			w.sched.after(delay, 0, func() { w.releaseHeld(body) })
		}
		return err
	}
	err := q.write(ctx, "send", func() error { return q.Queue.Send(ctx, body, delay) })
	if err == nil {
		q.p.w.tr.add("queue send %s after %s", body, delay)
	}
	if err == nil || errors.Is(err, errStoreDown) {
		// (An outage's send may have gone through, its answer lost.)
		q.p.w.queueSent(q.p, delay)
	}
	return err
}

func (q *queuePort) Receive(ctx context.Context, opts queue.ReceiveOptions) ([]queue.Message, error) {
	var msgs []queue.Message
	err := q.write(ctx, "receive", func() error {
		var err error
		msgs, err = q.Queue.Receive(ctx, opts)
		return err
	})
	for _, m := range msgs {
		q.p.w.queueReceived(q.p, m.ID, opts.Visibility)
		if err != nil {
			// Received, and the process died before anyone saw it (or
			// the answer was lost in an outage): hidden for another
			// visibility timeout.
			q.p.w.queueReleased(m.ID)
			q.p.w.redeliveryLost(messageInstance(m.Body), err)
		}
	}
	if err == nil && len(msgs) > 0 {
		q.p.w.tr.add("queue receive %s (receive %d): %s", msgs[0].ID, msgs[0].ReceiveCount, msgs[0].Body)
	}
	return msgs, err
}

func (q *queuePort) Ack(ctx context.Context, m queue.Message) error {
	err := q.write(ctx, "ack "+m.ID, func() error { return q.Queue.Ack(ctx, m) })
	if err == nil {
		q.p.w.queueAcked(m.ID)
	}
	return err
}
