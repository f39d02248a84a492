package main

import (
	"context"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/runfleet/runfleet/internal/runner"
)

// Bounds of one burst.
const (
	burstWait = 3 * time.Minute
	// idleProbe and idleLimit: after the last create the child's CPU is read
	// until it stops rising, so acks and last writes count to the burst.
	idleProbe = 250 * time.Millisecond
	idleLimit = 10 * time.Second
)

// burstResult is one burst of concurrent queued jobs.
type burstResult struct {
	label      string
	jobs       int
	poolBefore int // live instances before the burst
	// acceptedIn runs from the first POST to the last 2xx answer.
	acceptedIn time.Duration
	// issuedIn runs from the first POST to the last instance's running
	// stamp (just after its provider create returned): the whole burst
	// issued.
	issuedIn time.Duration
	// admittedToCreated is, per job, running stamp minus admission stamp:
	// how long the job waited in the burst.
	admittedToCreated []time.Duration
	// runningAt is each job's running stamp, by job (ledger id).
	runningAt map[int64]time.Time
	// startedToCreated is, per job, the running stamp minus the moment
	// the driver started it: its POST began, or it was queued on the
	// scale set (then it includes the long poll and the listener's ledger
	// write). Driver and server share the machine's clock.
	startedToCreated []time.Duration
	// cpu is the child's user+system CPU from the first POST until it was
	// idle again.
	cpu time.Duration
	// driverCPU is the driver's own CPU over the same span: it shares the
	// cores with the child.
	driverCPU time.Duration
	// idleRSS is the child's RSS just before the burst; mem is read at its
	// end, peak since the burst began when peakReset is true, else since
	// the child started.
	idleRSS   int64
	mem       memory
	peakReset bool
	check     burstCheck
}

// burstCheck is what the records say about one-instance-per-job.
type burstCheck struct {
	sendErrors int
	firstError string
	// missing: jobs with no instance; notRunning: with one not running.
	missing, notRunning int
	// extraForJob: instances beyond one for the same job.
	extraForJob int
	// live is the pool's live instance count after the burst; wantLive is
	// what it must be, one per job ever sent to this child.
	live, wantLive int
	// sharedRunnerIDs and sharedProviderIDs count ids that two instances
	// carry: a duplicate create.
	sharedRunnerIDs, sharedProviderIDs int
	// createdTwice lists instances whose create succeeded more than once.
	createdTwice []string
	// scaleSet is what the fake Actions service says after a scale-set
	// burst; nil for webhooks.
	scaleSet *scaleSetCheck
	// idsPerReplica: the processes are replicas, each with its own
	// simulated GitHub and provider numbering ids from the same start, so
	// ids repeat across replicas by construction and are not compared;
	// one instance per job is still checked by the records and by the
	// create lines of every replica's log.
	idsPerReplica bool
}

func (c burstCheck) ok() bool {
	idsApart := c.idsPerReplica || c.sharedRunnerIDs == 0 && c.sharedProviderIDs == 0
	return c.sendErrors == 0 && c.missing == 0 && c.notRunning == 0 && c.extraForJob == 0 &&
		c.live == c.wantLive && idsApart && len(c.createdTwice) == 0 && (c.scaleSet == nil || len(c.scaleSet.problems()) == 0)
}

// burstRun sends jobs from clients concurrent senders (spread over the
// replicas behind c) and measures the burst: CPU and memory are the sums
// over the processes.
func burstRun(ctx context.Context, c *child, p *payloadTemplate, label string, jobs []int64, poolBefore, clients int) (*burstResult, error) {
	// Signing happens before the clock starts: the driver shares the two
	// cores with the child and should take as little of them as it can.
	deliveries := make([]delivery, len(jobs))
	for i, job := range jobs {
		deliveries[i] = prepare(p, c.secret, job)
	}
	senders := sendersFor(c, clients)
	defer closeAll(senders)
	return measureBurst(ctx, c, label, poolBefore, func() ([]int64, []time.Time, time.Time, []error) {
		started, last, errs := sendAll(ctx, senders, deliveries, clients)
		return jobs, started, last, errs
	})
}

// measureBurst measures one burst that deliver hands to the child, by
// webhooks or through a scale set: deliver returns the jobs (ledger ids),
// when each was started (its POST, or queued on the scale set), when the
// last was accepted, and what failed. The clock starts just before
// deliver; the burst ends when every job's instance is running.
func measureBurst(ctx context.Context, c *child, label string, poolBefore int, deliver func() ([]int64, []time.Time, time.Time, []error)) (*burstResult, error) {
	res := &burstResult{label: label, poolBefore: poolBefore}
	before, err := fleetMemory(c)
	if err != nil {
		return nil, err
	}
	res.idleRSS = before.rss
	res.peakReset = true
	for _, m := range c.members() {
		res.peakReset = resetPeak(m.pid()) && res.peakReset
	}
	cpuBefore, err := fleetCPU(c)
	if err != nil {
		return nil, err
	}
	driverBefore, err := cpuTime(os.Getpid())
	if err != nil {
		return nil, err
	}

	start := time.Now()
	jobs, started, lastAnswer, sendErrs := deliver()
	res.jobs = len(jobs)
	res.acceptedIn = lastAnswer.Sub(start)
	res.check.sendErrors = len(sendErrs)
	if len(sendErrs) > 0 {
		res.check.firstError = sendErrs[0].Error()
	}
	if len(sendErrs) == 0 {
		names := make([]string, len(jobs))
		for i, job := range jobs {
			names[i] = instanceOf(job)
		}
		if err := waitRunning(ctx, c, names, burstWait); err != nil {
			return nil, fmt.Errorf("%s: %w", label, err)
		}
	}
	cpuAfter, err := fleetIdle(c)
	if err != nil {
		return nil, err
	}
	res.cpu = cpuAfter - cpuBefore
	driverAfter, err := cpuTime(os.Getpid())
	if err != nil {
		return nil, err
	}
	res.driverCPU = driverAfter - driverBefore
	if res.mem, err = fleetMemory(c); err != nil {
		return nil, err
	}
	if err := checkRecords(ctx, c, res, jobs, start); err != nil {
		return nil, err
	}
	res.check.createdTwice = c.logs.createdTwice()
	res.check.idsPerReplica = len(c.members()) > 1
	res.startedToCreated = sinceStarted(jobs, started, res.runningAt)
	return res, nil
}

// sendAll posts every delivery from clients goroutines, delivery i to
// senders[i mod n] (a load balancer's round robin over the replicas), and
// returns when each POST started, when the last answer came, and the
// failures.
func sendAll(ctx context.Context, senders []*sender, deliveries []delivery, clients int) ([]time.Time, time.Time, []error) {
	started := make([]time.Time, len(deliveries))
	var (
		next int64 = -1
		mu   sync.Mutex
		last time.Time
		errs []error
		wg   sync.WaitGroup
	)
	for range clients {
		wg.Go(func() {
			for {
				i := atomic.AddInt64(&next, 1)
				if i >= int64(len(deliveries)) {
					return
				}
				started[i] = time.Now()
				err := senders[i%int64(len(senders))].send(ctx, deliveries[i])
				now := time.Now()
				mu.Lock()
				if now.After(last) {
					last = now
				}
				if err != nil {
					errs = append(errs, err)
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return started, last, errs
}

// checkRecords reads the pool through the operator API: one running
// instance per job, no other, no id shared by two instances; and when the
// burst was fully issued.
func checkRecords(ctx context.Context, c *child, res *burstResult, jobs []int64, start time.Time) error {
	list, err := c.api.ListInstances(ctx, benchPool)
	if err != nil {
		return fmt.Errorf("list instances: %w", err)
	}
	byName := make(map[string]*runner.Instance, len(list))
	perJob := make(map[int64]int, len(list))
	runnerIDs := make(map[int64]int, len(list))
	providerIDs := make(map[string]int, len(list))
	for _, inst := range list {
		byName[inst.Name] = inst
		perJob[inst.JobID]++
		if inst.GitHubRunnerID != 0 {
			runnerIDs[inst.GitHubRunnerID]++
		}
		if inst.ProviderID != "" {
			providerIDs[inst.ProviderID]++
		}
	}
	res.runningAt = make(map[int64]time.Time, len(jobs))
	ck := &res.check
	ck.live, ck.wantLive = len(list), res.poolBefore+len(jobs)
	var lastRunning time.Time
	for _, job := range jobs {
		inst, ok := byName[instanceOf(job)]
		switch {
		case !ok:
			ck.missing++
			continue
		case inst.Status != runner.StatusRunning:
			ck.notRunning++
			continue
		}
		ck.extraForJob += perJob[job] - 1
		res.admittedToCreated = append(res.admittedToCreated, inst.StatusChangedAt.Sub(inst.CreatedAt))
		res.runningAt[job] = inst.StatusChangedAt
		if inst.StatusChangedAt.After(lastRunning) {
			lastRunning = inst.StatusChangedAt
		}
	}
	for _, n := range runnerIDs {
		ck.sharedRunnerIDs += n - 1
	}
	for _, n := range providerIDs {
		ck.sharedProviderIDs += n - 1
	}
	if !lastRunning.IsZero() {
		res.issuedIn = lastRunning.Sub(start.Round(0))
	}
	return nil
}
