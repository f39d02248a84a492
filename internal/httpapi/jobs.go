package httpapi

import (
	"fmt"
	"net/http"

	"github.com/runfleet/runfleet/internal/engine"
	"github.com/runfleet/runfleet/internal/runner"
)

// Job is one job as GET /api/v1/jobs lists it: the ledger record and what
// it waits for, decided by the one definition every count and runfleet
// why use (runner.WaitOf), so the CLI agrees with why, the status page
// and /metrics.
type Job struct {
	*runner.Job
	Wait runner.JobWait `json:"wait,omitempty"`
}

// listJobs answers GET /api/v1/jobs[?pool=P]: the unsettled demand — jobs
// waiting for a runner, for approval, or matching no pool — oldest first,
// as a JSON array (never null). Served, closed and expired jobs are not
// listed.
func (a *api) listJobs(w http.ResponseWriter, r *http.Request) {
	pool := r.URL.Query().Get("pool")
	open, err := a.engine.ReadOpenDemand(r.Context())
	if err != nil {
		a.fail(w, r, err)
		return
	}
	out := make([]Job, 0, len(open.Jobs))
	for _, j := range open.Jobs {
		if pool == "" || j.Pool == pool {
			out = append(out, Job{Job: j, Wait: open.Demand.Waits[j.Key()]})
		}
	}
	writeJSON(w, http.StatusOK, out)
}

// why answers GET /api/v1/jobs/{job}/why: the job's timeline with the
// answer to "what is it waiting for?" (engine.Timeline). {job} is the job
// id; a job runfleet never heard of is a 200 whose answer says so.
func (a *api) why(w http.ResponseWriter, r *http.Request) {
	id, err := engine.ParseJobRef(r.PathValue("job"))
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	tl, err := a.engine.Why(r.Context(), id)
	if err != nil {
		a.fail(w, r, fmt.Errorf("why job %d: %w", id, err))
		return
	}
	writeJSON(w, http.StatusOK, tl)
}
