package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/runfleet/runfleet/internal/runner"
	"github.com/runfleet/runfleet/internal/statuspage"
)

// now is the clock ages are measured with.
var now = time.Now

// outputFormat is the value of -o/--output: table (the default, for
// people) or json (for scripts). It sets the bool a command tests.
type outputFormat struct{ json *bool }

func (o outputFormat) String() string {
	if o.json != nil && *o.json {
		return "json"
	}
	return "table"
}

func (o outputFormat) Set(v string) error {
	switch v {
	case "json":
		*o.json = true
	case "table", "text":
		*o.json = false
	default:
		return errors.New("want table or json")
	}
	return nil
}

// addOutputFlags registers -o/--output, and --json as its older spelling.
func addOutputFlags(fs *flag.FlagSet, asJSON *bool) {
	fs.Var(outputFormat{asJSON}, "o", "output `format`: table or json")
	fs.Var(outputFormat{asJSON}, "output", "output `format`: table or json (same as -o)")
	fs.BoolVar(asJSON, "json", false, "same as -o json")
}

func (c *cli) printJSON(v any) int {
	enc := json.NewEncoder(c.stdout)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return c.fail(err)
	}
	return exitOK
}

// writeInstanceTable prints one line per instance. NOTE says why an
// instance is not simply running: its last fault and when it retries.
func writeInstanceTable(w io.Writer, list []*runner.Instance, at time.Time) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tPOOL\tSTATUS\tRUNNER\tJOB\tAGE\tNOTE")
	for _, in := range list {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n",
			in.Name, in.Pool, in.Status, orDash(string(in.RunnerStatus)), orDash(idString(in.JobID)), age(in.CreatedAt, at), note(in, at))
	}
	_ = tw.Flush()
}

func note(in *runner.Instance, at time.Time) string {
	var parts []string
	if in.Attempts > 0 {
		parts = append(parts, fmt.Sprintf("attempt %d", in.Attempts))
	}
	switch {
	case in.WaitingForGitHub.After(at):
		parts = append(parts, "waiting for GitHub's API budget, goes "+statuspage.Relative(in.WaitingForGitHub, at))
	case in.NextAttemptAt.After(at):
		parts = append(parts, "retry "+statuspage.Relative(in.NextAttemptAt, at))
	}
	if c := costNote(in.Cost); c != "" {
		parts = append(parts, c)
	}
	if in.ProviderFault != "" {
		parts = append(parts, truncate(in.ProviderFault, 60))
	}
	return strings.Join(parts, "; ")
}

// costNote is what a deleted instance cost, or why that is unknown
// (docs/cost.md); "" for an instance with no cost recorded (a live one).
func costNote(c *runner.Cost) string {
	switch {
	case c == nil:
		return ""
	case !c.Known():
		return "cost unknown: " + truncate(c.Unknown, 60)
	case c.USDPerHour == 0 && c.Seconds == 0:
		return "cost " + usd(c.USD) + " (no machine was made)"
	}
	return fmt.Sprintf("cost %s (%ds at $%g/h)", usd(c.USD), c.Seconds, c.USDPerHour)
}

// writeInstanceDetail prints every field of one instance.
func writeInstanceDetail(w io.Writer, in *runner.Instance, at time.Time) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	row := func(k, v string) { fmt.Fprintf(tw, "%s:\t%s\n", k, v) }
	row("name", in.Name)
	row("pool", in.Pool)
	row("status", fmt.Sprintf("%s (for %s)", in.Status, age(in.StatusChangedAt, at)))
	row("runner status", orDash(string(in.RunnerStatus)))
	row("job", fmt.Sprintf("%d (run attempt %d)", in.JobID, in.RunAttempt))
	if in.ActiveJobID != 0 {
		row("running job", fmt.Sprint(in.ActiveJobID))
	}
	row("owner", in.Owner.String())
	row("labels", orDash(strings.Join(in.Labels, ", ")))
	row("github runner id", orDash(idString(in.GitHubRunnerID)))
	row("provider id", orDash(in.ProviderID))
	row("provider fault", orDash(in.ProviderFault))
	row("attempts", fmt.Sprint(in.Attempts))
	row("next attempt", timeAndAge(in.NextAttemptAt, at))
	row("create attempt", fmt.Sprint(in.CreateAttempt))
	if in.Cost != nil {
		row("cost", strings.TrimPrefix(costNote(in.Cost), "cost "))
	}
	row("created", timeAndAge(in.CreatedAt, at))
	row("updated", timeAndAge(in.UpdatedAt, at))
	if !in.ExpiresAt.IsZero() {
		row("record expires", timeAndAge(in.ExpiresAt, at))
	}
	row("version", fmt.Sprint(in.Version))
	_ = tw.Flush()
}

// age is how long ago t was, for people ("4s", "7d"; "-" when unknown).
func age(t, at time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return statuspage.HumanDuration(at.Sub(t))
}

// timeAndAge prints an instant in UTC with its distance from at ("4s ago",
// "in 4s").
func timeAndAge(t, at time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format(time.RFC3339) + " (" + statuspage.Relative(t, at) + ")"
}

func idString(id int64) string {
	if id == 0 {
		return ""
	}
	return fmt.Sprint(id)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func truncate(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}
