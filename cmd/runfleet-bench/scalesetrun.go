package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/runfleet/runfleet/internal/runner"
)

// ackWait bounds the wait, after the last create of a burst, for the
// listener's last acknowledgements: it acknowledges a message once all of
// its events are in the ledger, and the workers may create the last
// instance before that.
const ackWait = 10 * time.Second

// scaleSetLatency is the one-at-a-time run through a scale set: each job
// queued once the previous one's instance is running. The start of each
// figure is the moment the driver queued the job on the fake Actions
// service; the ends are the server's stamps, on the same machine clock.
type scaleSetLatency struct {
	jobs int
	// queuedToCreated: queued → provider create returned (running stamp).
	queuedToCreated []time.Duration
	// queuedToAdmitted: queued → the instance recorded (the listener's
	// long poll hand-off, the decode, the ledger write).
	queuedToAdmitted []time.Duration
	// admittedToCreated: as the webhook run's, from the server's records.
	admittedToCreated []time.Duration
}

// scaleSetCheck is what the fake Actions service says once a burst's
// instances are all running.
type scaleSetCheck struct {
	// unacknowledged: messages the listener never acknowledged.
	unacknowledged int
	// jobsWithoutRunner, extraRunners: JIT runners the scale set has
	// registered under each job's instance name — exactly one each;
	// strayRunners: registered under a name no job of the burst has.
	jobsWithoutRunner, extraRunners, strayRunners int
}

// problems describes what is wrong; none when the intake lost and
// doubled nothing.
func (c scaleSetCheck) problems() []string {
	var out []string
	add := func(n int, what string) {
		if n != 0 {
			out = append(out, fmt.Sprintf("%d %s", n, what))
		}
	}
	add(c.unacknowledged, "scale-set messages never acknowledged")
	add(c.jobsWithoutRunner, "jobs without a JIT runner in the scale set")
	add(c.extraRunners, "extra JIT runners for a job")
	add(c.strayRunners, "JIT runners for no job")
	return out
}

// tallyRunners compares the runner names the scale set registered with
// the instance names wanted, one runner each.
func tallyRunners(registered, want []string) (missing, extra, stray int) {
	count := make(map[string]int, len(registered))
	for _, n := range registered {
		count[n]++
	}
	for _, n := range want {
		switch c := count[n]; {
		case c == 0:
			missing++
		case c > 1:
			extra += c - 1
		}
		delete(count, n)
	}
	for _, c := range count {
		stray += c
	}
	return missing, extra, stray
}

// sinceStarted is, for each job i with an end stamp, end minus
// started[i]; a job without one is left out (the burst's checks report
// it), as is a start never stamped.
func sinceStarted(jobs []int64, started []time.Time, end map[int64]time.Time) []time.Duration {
	out := make([]time.Duration, 0, len(jobs))
	for i, j := range jobs {
		e, ok := end[j]
		if ok && i < len(started) && !started[i].IsZero() {
			// Round(0) drops the monotonic reading: the end is a wall
			// clock stamp from the server.
			out = append(out, e.Sub(started[i].Round(0)))
		}
	}
	return out
}

// withChildFunc runs a part on a fresh child (benchmark's withChild).
type withChildFunc func(name string, maxRunners int, o childOptions, part func(*child) error) error

// scaleSetRuns are the scale-set parts, each on a fresh child and a fresh
// fake GitHub: the one-at-a-time run, then the burst.
func scaleSetRuns(ctx context.Context, s settings, withChild withChildFunc, rep *report, progress io.Writer) error {
	if s.scaleSetLatencyJobs > 0 {
		w := startActionsWorld()
		err := withChild("scaleset-latency", s.scaleSetLatencyJobs, w.childOptions(), func(c *child) error {
			setID, err := w.listening(ctx, c)
			if err != nil {
				return err
			}
			fmt.Fprintf(progress, "runfleet-bench: scale set: %d sequential jobs\n", s.scaleSetLatencyJobs)
			rep.scaleSetLatency, err = scaleSetLatencyRun(ctx, c, w, setID, s.scaleSetLatencyJobs)
			return err
		})
		if err = errors.Join(err, w.close()); err != nil {
			return fmt.Errorf("one at a time: %w", err)
		}
	}
	w := startActionsWorld()
	err := withChild("scaleset-burst", s.burst, w.childOptions(), func(c *child) error {
		setID, err := w.listening(ctx, c)
		if err != nil {
			return err
		}
		label := "one burst through the scale set, fresh server"
		fmt.Fprintf(progress, "runfleet-bench: %s: %d jobs\n", label, s.burst)
		rep.scaleSetBurst, err = scaleSetBurstRun(ctx, c, w, setID, label, s.burst)
		return err
	})
	if err = errors.Join(err, w.close()); err != nil {
		return fmt.Errorf("burst: %w", err)
	}
	return nil
}

// scaleSetLatencyRun queues n jobs one at a time.
func scaleSetLatencyRun(ctx context.Context, c *child, w *actionsWorld, setID int64, n int) (*scaleSetLatency, error) {
	res := &scaleSetLatency{jobs: n}
	jobs := make([]int64, 0, n)
	queuedAt := make([]time.Time, 0, n)
	for i := range n {
		at := time.Now()
		job := runner.ScaleSetJobID(w.queue(setID, int64(firstJobID+i)))
		jobs = append(jobs, job)
		queuedAt = append(queuedAt, at)
		if err := waitRunning(ctx, c, []string{instanceOf(job)}, perJobWait); err != nil {
			return nil, err
		}
	}
	// Read the records once the run is over, so the reads do not slow it.
	admittedAt := make(map[int64]time.Time, n)
	runningAt := make(map[int64]time.Time, n)
	for _, job := range jobs {
		inst, err := c.api.GetInstance(ctx, instanceOf(job))
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", instanceOf(job), err)
		}
		if inst.Status != runner.StatusRunning {
			return nil, fmt.Errorf("%s is %s, want running", inst.Name, inst.Status)
		}
		admittedAt[job], runningAt[job] = inst.CreatedAt, inst.StatusChangedAt
		res.admittedToCreated = append(res.admittedToCreated, inst.StatusChangedAt.Sub(inst.CreatedAt))
	}
	res.queuedToCreated = sinceStarted(jobs, queuedAt, runningAt)
	res.queuedToAdmitted = sinceStarted(jobs, queuedAt, admittedAt)
	return res, nil
}

// scaleSetBurstRun queues n jobs at once on the scale set and measures
// them as a webhook burst is measured, from the first job queued; then it
// asks the fake whether every message was acknowledged and every job got
// exactly one JIT runner.
func scaleSetBurstRun(ctx context.Context, c *child, w *actionsWorld, setID int64, label string, n int) (*burstResult, error) {
	var jobs []int64
	res, err := measureBurst(ctx, c, label, 0, func() ([]int64, []time.Time, time.Time, []error) {
		jobs = make([]int64, n)
		queuedAt := make([]time.Time, n)
		for i := range jobs {
			queuedAt[i] = time.Now()
			jobs[i] = runner.ScaleSetJobID(w.queue(setID, int64(firstJobID+i)))
		}
		return jobs, queuedAt, time.Now(), nil
	})
	if err != nil {
		return nil, err
	}
	ck := &scaleSetCheck{}
	deadline := time.Now().Add(ackWait)
	for ck.unacknowledged = w.actions.Unacknowledged(setID); ck.unacknowledged > 0 && time.Now().Before(deadline); {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
		ck.unacknowledged = w.actions.Unacknowledged(setID)
	}
	var registered []string
	for _, r := range w.actions.Runners() {
		if r.SetID == setID {
			registered = append(registered, r.Name)
		}
	}
	want := make([]string, len(jobs))
	for i, j := range jobs {
		want[i] = instanceOf(j)
	}
	ck.jobsWithoutRunner, ck.extraRunners, ck.strayRunners = tallyRunners(registered, want)
	res.check.scaleSet = ck
	return res, nil
}

// sortedCopy is d sorted, for percentiles.
func sortedCopy(d []time.Duration) []time.Duration {
	out := slices.Clone(d)
	slices.Sort(out)
	return out
}
