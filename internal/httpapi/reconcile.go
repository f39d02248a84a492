package httpapi

import (
	"fmt"
	"net/http"

	"github.com/runfleet/runfleet/internal/engine"
)

// ReconcileResult is the answer to POST /api/v1/reconcile. A pass that hit
// errors answers 500 with Error and Status set, as every error answer, and
// Errors listing what it could not fix this time (the next pass tries
// again); Report counts what it did either way.
type ReconcileResult struct {
	Report engine.ReconcileReport `json:"report"`
	Error  string                 `json:"error,omitempty"`
	Status int                    `json:"status,omitempty"`
	Errors []string               `json:"errors,omitempty"`
}

// reconcile runs one reconcile pass now, as the ticker would.
func (a *api) reconcile(w http.ResponseWriter, r *http.Request) {
	rep, err := a.engine.Reconcile(r.Context())
	res := ReconcileResult{Report: rep}
	status := http.StatusOK
	if err != nil {
		a.log.ErrorContext(r.Context(), "operator reconcile pass had errors", "error", err)
		status = http.StatusInternalServerError
		res.Errors = splitJoined(err)
		res.Status = status
		res.Error = fmt.Sprintf("reconcile pass finished with %d error(s); the next pass retries them", len(res.Errors))
	}
	writeJSON(w, status, res)
}

// splitJoined lists the errors an errors.Join combined, one string each.
func splitJoined(err error) []string {
	if multi, ok := err.(interface{ Unwrap() []error }); ok {
		var out []string
		for _, e := range multi.Unwrap() {
			out = append(out, e.Error())
		}
		return out
	}
	return []string{err.Error()}
}
