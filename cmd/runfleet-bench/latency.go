package main

import (
	"context"
	"fmt"
	"time"

	"github.com/runfleet/runfleet/internal/runner"
)

// latencyResult is the sequential run: one job at a time, the next sent as
// soon as the previous one's instance is running.
type latencyResult struct {
	jobs int
	// admittedToCreated is StatusChangedAt (running, stamped just after the
	// provider's create returned) minus CreatedAt (stamped when the webhook
	// admitted the job), both the server's clock.
	admittedToCreated []time.Duration
	// sentToCreated is the same end minus the moment the driver started the
	// POST; driver and server share the machine's clock.
	sentToCreated []time.Duration
	// answered is the client-observed webhook response time.
	answered []time.Duration
}

// perJobWait bounds how long one sequential job may take to be running.
const perJobWait = 30 * time.Second

// latencyRun sends the jobs one at a time, each to the next replica in
// turn (as a load balancer would), or to the lone child.
func latencyRun(ctx context.Context, c *child, p *payloadTemplate, jobs []int64) (*latencyResult, error) {
	senders := sendersFor(c, 1)
	defer closeAll(senders)
	res := &latencyResult{jobs: len(jobs)}
	sentAt := make(map[string]time.Time, len(jobs))
	for i, job := range jobs {
		d := prepare(p, c.secret, job)
		name := instanceOf(job)
		start := time.Now()
		if err := senders[i%len(senders)].send(ctx, d); err != nil {
			return nil, err
		}
		res.answered = append(res.answered, time.Since(start))
		sentAt[name] = start
		if err := waitRunning(ctx, c, []string{name}, perJobWait); err != nil {
			return nil, err
		}
	}
	// Read the records once the run is over, so the reads do not slow it.
	for _, job := range jobs {
		name := instanceOf(job)
		inst, err := c.api.GetInstance(ctx, name)
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", name, err)
		}
		if inst.Status != runner.StatusRunning {
			return nil, fmt.Errorf("%s is %s, want running", name, inst.Status)
		}
		res.admittedToCreated = append(res.admittedToCreated, inst.StatusChangedAt.Sub(inst.CreatedAt))
		res.sentToCreated = append(res.sentToCreated, inst.StatusChangedAt.Sub(sentAt[name].Round(0)))
	}
	return res, nil
}
