package main

import (
	"context"

	"github.com/runfleet/runfleet/internal/engine"
)

const whyDescription = `Says why a job is waiting — or what became of it — from the server's
records: the first line answers in one sentence what it waits for now
(capacity, GitHub's API budget, a provider's backoff, its runner booting,
a pool matching its labels …) and when the next attempt is; then its
ledger record and every instance made for it, with how each ended.
JOB is the job's id or its URL on GitHub
(https://github.com/OWNER/REPO/actions/runs/RUN/job/JOB).`

func (c *cli) why(ctx context.Context, args []string) int {
	fs := c.newFlags("why", "runfleet why JOB [-o table|json]", whyDescription)
	var api apiFlags
	api.register(fs, c)
	positional, status, done := parse(fs, args)
	if done {
		return status
	}
	switch {
	case len(positional) == 0:
		return c.usageError(fs, "name the job: its id or its GitHub URL")
	case len(positional) > 1:
		return c.usageError(fs, "unexpected argument %q", positional[1])
	}
	id, err := engine.ParseJobRef(positional[0])
	if err != nil {
		return c.usageError(fs, "%v", err)
	}
	client, err := api.client(c)
	if err != nil {
		return c.usageError(fs, "%v", err)
	}
	tl, err := client.Why(ctx, id)
	if err != nil {
		return c.apiFail(err)
	}
	if api.json {
		return c.printJSON(tl)
	}
	if err := tl.Text(c.stdout); err != nil {
		return c.fail(err)
	}
	return exitOK
}
