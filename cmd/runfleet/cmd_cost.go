package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/runfleet/runfleet/internal/cost"
	"github.com/runfleet/runfleet/internal/httpapi"
	"github.com/runfleet/runfleet/internal/runner"
)

const costDescription = `Sums what the runner machines cost, per pool, per repository and per UTC day,
over the deleted instances the server still keeps (7 days). Each instance's
cost is its machine's price (pools[].cost.usd_per_hour, the prices table, or
EC2's own prices: the Price List API, spot price history) times the seconds
from the start of the create that
made it to its delete, computed once when it was deleted. Instances nothing
priced are counted as UNKNOWN with their running time.

--by pool, repository, job or day prints one table; the default prints the
pool, repository and day tables. A job's cost is that of the instances whose
runner ran it (or, for one that ran none, that were made for it).`

// costGroupings are --by's values; costDefault are the tables printed
// without it, in this order.
var (
	costGroupings = []string{"pool", "repository", "job", "day"}
	costDefault   = []string{"pool", "repository", "day"}
)

func (c *cli) cost(ctx context.Context, args []string) int {
	fs := c.newFlags("cost", "runfleet cost [--pool POOL] [--by pool|repository|job|day] [-o table|json]", costDescription)
	var api apiFlags
	api.register(fs, c)
	pool := fs.String("pool", "", "only this pool's instances")
	by := fs.String("by", "", "one table: pool, repository, job or day (default: pool, repository and day)")
	positional, status, done := parse(fs, args)
	if done {
		return status
	}
	if len(positional) > 0 {
		return c.usageError(fs, "unexpected argument %q", positional[0])
	}
	if *by != "" && !slices.Contains(costGroupings, *by) {
		return c.usageError(fs, "--by %q: want one of %s", *by, strings.Join(costGroupings, ", "))
	}
	client, err := api.client(c)
	if err != nil {
		return c.usageError(fs, "%v", err)
	}
	list, err := client.ListInstancesWhere(ctx, httpapi.InstanceFilter{Pool: *pool, Statuses: []runner.Status{runner.StatusDeleted}, Deleted: true})
	if err != nil {
		var apiErr *httpapi.Error
		if errors.As(err, &apiErr) && apiErr.StatusCode == http.StatusNotImplemented {
			err = fmt.Errorf("%w\n(on AWS, read runfleet_cost_dollars_total in CloudWatch: the store cannot list deleted instances)", err)
		}
		return c.apiFail(err)
	}
	sum := cost.Summarize(list)
	if api.json {
		return c.printJSON(sum)
	}
	writeCost(c.stdout, sum, *by)
	return exitOK
}

// writeCost prints the summary's tables (only by's when set) and a total.
func writeCost(w io.Writer, sum cost.Summary, by string) {
	if sum.Total.Instances+sum.Total.Unknown == 0 {
		fmt.Fprintln(w, "no deleted instances with a cost (the server keeps deleted instances 7 days)")
		return
	}
	tables := map[string][]cost.Row{"pool": sum.Pools, "repository": sum.Repositories, "job": sum.Jobs, "day": sum.Days}
	shown := costDefault
	if by != "" {
		shown = []string{by}
	}
	for _, g := range shown {
		writeCostTable(w, strings.ToUpper(g), tables[g])
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "total %s over %s of machine time, %s", usd(sum.Total.USD), hours(sum.Total.Seconds), plural(sum.Total.Instances, "instance"))
	if sum.Total.Unknown > 0 {
		fmt.Fprintf(w, "; %s of unknown price (see 'runfleet instances list --status deleted')", plural(sum.Total.Unknown, "instance"))
	}
	fmt.Fprintln(w)
}

func writeCostTable(w io.Writer, heading string, rows []cost.Row) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "%s\tUSD\tHOURS\tINSTANCES\tUNKNOWN\n", heading)
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%.2f\t%d\t%d\n", r.Key, usd(r.USD), float64(r.Seconds)/3600, r.Instances, r.Unknown)
	}
	_ = tw.Flush()
}

// usd writes dollars to the cent, and a non-zero cost under a cent as such.
func usd(v float64) string {
	if v > 0 && v < 0.005 {
		return "<$0.01"
	}
	return fmt.Sprintf("$%.2f", v)
}

// hours writes machine time in hours, or in seconds when there is less
// than would show as 0.01 h (the README tour's machines run seconds).
func hours(seconds int64) string {
	if seconds > 0 && seconds < 18 {
		return fmt.Sprintf("%d s", seconds)
	}
	return fmt.Sprintf("%.2f h", float64(seconds)/3600)
}
