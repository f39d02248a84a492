package rest_test

import (
	"testing"
	"time"

	"github.com/runfleet/runfleet/internal/enginetest"
	"github.com/runfleet/runfleet/internal/github/rest"
	"github.com/runfleet/runfleet/internal/runner"
)

// BenchmarkGitHubCallsPerJob measures what one job costs in GitHub API
// calls (rate-limit budget) through the engine, the real client and the
// fake GitHub, from queued to deleted. The figure is calls/job; time per
// op is dominated by polling and is not the point.
func BenchmarkGitHubCallsPerJob(b *testing.B) {
	b.Run("ephemeral", func(b *testing.B) {
		w := newWorld(b, worldOptions{quiet: true})
		w.lifecycle(1) // mint the installation token outside the measurement
		before := w.gh.Calls()
		b.ResetTimer()
		for i := range b.N {
			w.lifecycle(int64(1000 + i))
		}
		b.StopTimer()
		report(b, w.gh.Calls().Sub(before))
	})
	// completed delivered while GitHub still shows the runner busy (an early
	// delivery): the 422, then the re-sent delete.
	b.Run("completed-while-busy", func(b *testing.B) {
		w := newWorld(b, worldOptions{quiet: true, deleteBackoffMax: 10 * time.Minute})
		w.lifecycle(1)
		before := w.gh.Calls()
		b.ResetTimer()
		for i := range b.N {
			id := int64(1000 + i)
			name := enginetest.InstanceName(id)
			w.deliver(runner.ActionQueued, id, "")
			w.WaitStatus(name, runner.StatusRunning)
			w.startJob(id)
			w.deliver(runner.ActionCompleted, id, name)
			w.WaitFor("the busy delete", func() bool { return w.Instance(name).Attempts == 1 })
			w.fake.FinishRunner(name)
			w.deliver(runner.ActionCompleted, id, name)
			w.WaitStatus(name, runner.StatusDeleted)
		}
		b.StopTimer()
		report(b, w.gh.Calls().Sub(before))
	})
}

func report(b *testing.B, calls rest.CallCounts) {
	n := float64(b.N)
	b.ReportMetric(float64(calls.API())/n, "github-calls/job")
	b.ReportMetric(float64(calls.ByOperation[rest.OpGenerateJITConfig])/n, "jit/job")
	b.ReportMetric(float64(calls.ByOperation[rest.OpRemoveRunner])/n, "remove/job")
	b.ReportMetric(float64(calls.ByOperation[rest.OpListRunners])/n, "list/job")
	b.ReportMetric(float64(calls.ByOperation[rest.OpListRunnerDownloads])/n, "downloads/job")
	b.ReportMetric(float64(calls.ByOperation[rest.OpCreateInstallationToken])/n, "token-mints/job")
}
