package main

import (
	"context"
	"fmt"
	"time"

	"github.com/runfleet/runfleet/internal/runner"
)

// apiCheckEvery is how often waitRunning also asks the operator API, in
// case the log lines it watches for never come. When they do come, the API
// is never asked and the wait costs the child nothing.
const apiCheckEvery = time.Second

// waitRunning blocks until the instance of every name is running, as the
// child's log or, failing that, its operator API says.
func waitRunning(ctx context.Context, c *child, names []string, limit time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	check := time.NewTicker(apiCheckEvery)
	defer check.Stop()
	for !c.logs.allCreated(names) {
		select {
		case <-c.logs.changed:
		case <-check.C:
			running, err := allRunning(ctx, c, names)
			if err != nil {
				return err
			}
			if running {
				return nil
			}
		case <-c.proc.Exited():
			return fmt.Errorf("%s exited during the run: %v", c.name, c.proc.WaitErr())
		case <-ctx.Done():
			return fmt.Errorf("%d instances not all running within %s", len(names), limit)
		}
	}
	return nil
}

func allRunning(ctx context.Context, c *child, names []string) (bool, error) {
	list, err := c.api.ListInstances(ctx, benchPool)
	if err != nil {
		return false, fmt.Errorf("list instances: %w", err)
	}
	status := make(map[string]runner.Status, len(list))
	for _, inst := range list {
		status[inst.Name] = inst.Status
	}
	for _, n := range names {
		if status[n] != runner.StatusRunning {
			return false, nil
		}
	}
	return true, nil
}
