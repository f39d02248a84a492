package engine

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
)

// Text writes the timeline as `runfleet why` prints it: the answer on the
// first line, then each run attempt's ledger record and the instances made
// for it, times in UTC.
func (tl *Timeline) Text(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "Job %d: %s.\n", tl.JobID, tl.Answer.Sentence)
	if !tl.Answer.NextAttemptAt.IsZero() {
		fmt.Fprintf(&b, "Next attempt: %s (in %s).\n", stamp(tl.Answer.NextAttemptAt), roughly(tl.Answer.NextAttemptAt.Sub(tl.At)))
	}
	if len(tl.Attempts) == 0 {
		_, err := io.WriteString(w, b.String())
		return err
	}
	if tl.MaxRunners > 0 {
		fmt.Fprintf(&b, "Pool %s: %d of max_runners %d slots held now.\n", tl.Pool, tl.Usage, tl.MaxRunners)
	}
	for _, j := range tl.Attempts {
		fmt.Fprintf(&b, "\nLedger record %s (version %d):\n", j.Key(), j.Version)
		line := func(at time.Time, what string) {
			if !at.IsZero() {
				fmt.Fprintf(&b, "  %s  %s\n", stamp(at), what)
			}
		}
		from := "delivery " + orUnknown(j.Delivery)
		if j.DeliverySource != "" {
			from += " (" + j.DeliverySource + ")"
		}
		line(j.QueuedAt, fmt.Sprintf("queued in %s, labels %s; recorded from %s", orUnknown(j.Repository), strings.Join(j.Labels, ", "), from))
		line(j.InterruptedSince, "machine "+j.Interrupted+" interrupted while running it")
		line(j.CompletedAt, "completed in GitHub ("+orUnknown(j.Conclusion)+")")
		line(j.RerunRequestedAt, fmt.Sprintf("re-run asked of GitHub (%d calls, outcome %s)", j.RerunCalls, orUnknown(j.RerunOutcome)))
		line(j.StatusChangedAt, fmt.Sprintf("status %s (the ledger keeps the current status and when it was entered)", j.Status))
		if j.Made > 0 || j.Instance != "" {
			fmt.Fprintf(&b, "  instances made: %d; live one: %s\n", j.Made, orNone(j.Instance))
		}
		if !j.NextAttemptAt.IsZero() {
			fmt.Fprintf(&b, "  next instance not before %s\n", stamp(j.NextAttemptAt))
		}
	}
	if len(tl.Instances) > 0 {
		b.WriteString("\nInstances made for it:\n")
		tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "  NAME\tSTATUS\tSINCE\tRUNNER\tATTEMPTS\tFAULT\tWAITING FOR GITHUB")
		for _, in := range tl.Instances {
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%d\t%s\t%s\n", in.Name, in.Status, stamp(in.StatusChangedAt),
				orNone(string(in.RunnerStatus)), in.Attempts, orNone(in.ProviderFault), orNone(stampIf(in.WaitingForGitHub)))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func roughly(d time.Duration) string {
	if d < time.Second {
		return "under a second"
	}
	return d.Round(time.Second).String()
}

func stampIf(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return stamp(t)
}

func orNone(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
