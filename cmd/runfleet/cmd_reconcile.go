package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/runfleet/runfleet/internal/httpapi"
)

func (c *cli) reconcile(ctx context.Context, args []string) int {
	fs := c.newFlags("reconcile", "runfleet reconcile [-o table|json]",
		"Runs a reconcile pass on the server now, instead of waiting for engine.reconcile_interval, and prints what it did.")
	var api apiFlags
	api.register(fs, c)
	positional, status, done := parse(fs, args)
	if done {
		return status
	}
	if len(positional) > 0 {
		return c.usageError(fs, "unexpected argument %q", positional[0])
	}
	client, err := api.client(c)
	if err != nil {
		return c.usageError(fs, "%v", err)
	}
	res, err := client.Reconcile(ctx)
	var apiErr *httpapi.Error
	if err != nil && (res == nil || !errors.As(err, &apiErr) || apiErr.StatusCode != 500) {
		return c.apiFail(err)
	}
	if api.json {
		c.printJSON(res)
	} else {
		r := res.Report
		fmt.Fprintf(c.stdout, "examined %d live instances: %d creates and %d deletes re-sent, %d stuck creating and %d stuck deleting recovered, %d in error scheduled for delete\n",
			r.Examined, r.CreatesResent, r.DeletesResent, r.StuckCreating, r.StuckDeleting, r.ErrorsScheduled)
		for _, e := range res.Errors {
			fmt.Fprintf(c.stdout, "error: %s\n", e)
		}
	}
	if err != nil {
		return c.fail(err)
	}
	return exitOK
}
