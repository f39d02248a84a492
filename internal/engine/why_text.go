package engine

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/runfleet/runfleet/internal/runner"
)

// Text writes the timeline as `runfleet why` prints it: the answer on the
// first line, then each run attempt's ledger record — its dated lines in
// order, on runfleet's clock, then its notes — and the instances made for
// it, times in UTC.
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
	if tl.Warm != nil {
		fmt.Fprintf(&b, "Warm pool: %s.\n", tl.Warm.Sentence())
	}
	for _, j := range tl.Attempts {
		fmt.Fprintf(&b, "\nLedger record %s (version %d), times as runfleet recorded them:\n", j.Key(), j.Version)
		for _, ev := range ledgerEvents(j) {
			fmt.Fprintf(&b, "  %s  %s\n", stamp(ev.at), ev.what)
		}
		for _, note := range ledgerNotes(j, tl.Instances, tl.At) {
			fmt.Fprintf(&b, "  %s\n", note)
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

// ledgerEvent is one dated line of a ledger record's story.
type ledgerEvent struct {
	at   time.Time
	what string
}

// ledgerEvents are a job record's dated lines, oldest first, every one
// dated by runfleet's clock: a time from elsewhere (GitHub's completed_at,
// the provider's interruption notice) would put lines out of order when
// the clocks disagree — a redelivered or replayed payload is dated days
// before runfleet received it — so those are ledgerNotes.
func ledgerEvents(j *runner.Job) []ledgerEvent {
	from := "delivery " + orUnknown(j.Delivery)
	if j.DeliverySource != "" {
		from += " (" + j.DeliverySource + ")"
	}
	status := fmt.Sprintf("status %s (the ledger keeps the current status and when it was entered)", j.Status)
	if j.Status == runner.JobClosed {
		status = fmt.Sprintf("status closed: GitHub reported it completed (%s)", orUnknown(j.Conclusion))
	}
	events := []ledgerEvent{
		{j.QueuedAt, fmt.Sprintf("queued in %s, labels %s; recorded from %s", orUnknown(j.Repository), strings.Join(j.Labels, ", "), from)},
		{j.RerunRequestedAt, fmt.Sprintf("re-run asked of GitHub (%d calls, outcome %s)", j.RerunCalls, orUnknown(j.RerunOutcome))},
		{j.StatusChangedAt, status},
	}
	events = slices.DeleteFunc(events, func(ev ledgerEvent) bool { return ev.at.IsZero() })
	slices.SortStableFunc(events, func(a, b ledgerEvent) int { return a.at.Compare(b.at) })
	return events
}

// ledgerNotes are what a job record says beyond its dated lines: times
// from other clocks, named as such, and its instances. The instance the
// record names is called live only while it is; the next instance's
// earliest time only while the job still wants one.
func ledgerNotes(j *runner.Job, instances []*runner.Instance, at time.Time) []string {
	var notes []string
	if !j.CompletedAt.IsZero() {
		notes = append(notes, "GitHub dates its completion "+stamp(j.CompletedAt)+" (GitHub's clock)")
	}
	if j.Interrupted != "" {
		note := "machine " + j.Interrupted + " was interrupted while running it"
		if !j.InterruptedSince.IsZero() {
			note += " (the provider dates the interruption " + stamp(j.InterruptedSince) + ")"
		}
		notes = append(notes, note)
	}
	if j.Made > 0 || j.Instance != "" {
		live := "none"
		if named := instanceNamed(instances, j.Instance); named != nil && named.Status.Live() {
			live = fmt.Sprintf("%s (%s)", named.Name, named.Status)
		}
		notes = append(notes, fmt.Sprintf("instances made: %d; live one: %s", j.Made, live))
	}
	if j.Status.WantsRunner() && j.NextAttemptAt.After(at) {
		notes = append(notes, "next instance not before "+stamp(j.NextAttemptAt))
	}
	return notes
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
