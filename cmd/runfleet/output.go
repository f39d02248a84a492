package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/runfleet/runfleet/internal/runner"
)

// now is the clock ages are measured with.
var now = time.Now

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
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\t%s\n",
			in.Name, in.Pool, in.Status, orDash(string(in.RunnerStatus)), in.JobID, age(in.CreatedAt, at), note(in, at))
	}
	_ = tw.Flush()
}

func note(in *runner.Instance, at time.Time) string {
	var parts []string
	if in.Attempts > 0 {
		parts = append(parts, fmt.Sprintf("attempt %d", in.Attempts))
	}
	if in.NextAttemptAt.After(at) {
		if d := in.NextAttemptAt.Sub(at).Round(time.Second); d > 0 {
			parts = append(parts, "retry in "+d.String())
		} else {
			parts = append(parts, "retry due")
		}
	}
	if in.ProviderFault != "" {
		parts = append(parts, truncate(in.ProviderFault, 60))
	}
	return strings.Join(parts, "; ")
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
	row("owner", in.Owner)
	row("labels", orDash(strings.Join(in.Labels, ", ")))
	row("github runner id", orDash(idString(in.GitHubRunnerID)))
	row("provider id", orDash(in.ProviderID))
	row("provider fault", orDash(in.ProviderFault))
	row("attempts", fmt.Sprint(in.Attempts))
	row("next attempt", timeAndAge(in.NextAttemptAt, at))
	row("create attempt", fmt.Sprint(in.CreateAttempt))
	row("created", timeAndAge(in.CreatedAt, at))
	row("updated", timeAndAge(in.UpdatedAt, at))
	if !in.ExpiresAt.IsZero() {
		row("record expires", timeAndAge(in.ExpiresAt, at))
	}
	row("version", fmt.Sprint(in.Version))
	_ = tw.Flush()
}

// age is how long ago t was, to the second ("-" when unknown).
func age(t, at time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return at.Sub(t).Round(time.Second).String()
}

// timeAndAge prints an instant in UTC with its distance from at.
func timeAndAge(t, at time.Time) string {
	if t.IsZero() {
		return "-"
	}
	d := at.Sub(t).Round(time.Second)
	rel := d.String() + " ago"
	if d < 0 {
		rel = "in " + (-d).String()
	}
	return t.UTC().Format(time.RFC3339) + " (" + rel + ")"
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
