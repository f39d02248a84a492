package httpapi

import (
	"fmt"
	"net/http"

	"github.com/runfleet/runfleet/internal/runner"
)

// listJobs answers GET /api/v1/jobs[?pool=P]: the open demand — jobs
// waiting for a runner or for approval — oldest first, as a JSON array
// (never null). Served, closed and expired jobs are not listed.
func (a *api) listJobs(w http.ResponseWriter, r *http.Request) {
	pool := r.URL.Query().Get("pool")
	jobs, err := a.engine.ListOpenJobs(r.Context())
	if err != nil {
		a.fail(w, r, fmt.Errorf("list open jobs: %w", err))
		return
	}
	out := make([]*runner.Job, 0, len(jobs))
	for _, j := range jobs {
		if pool == "" || j.Pool == pool {
			out = append(out, j)
		}
	}
	writeJSON(w, http.StatusOK, out)
}
