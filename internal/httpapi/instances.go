package httpapi

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/runfleet/runfleet/internal/engine"
	"github.com/runfleet/runfleet/internal/runner"
	"github.com/runfleet/runfleet/internal/store"
)

// listInstances answers GET /api/v1/instances[?pool=P]: the live instances,
// as a JSON array (never null).
func (a *api) listInstances(w http.ResponseWriter, r *http.Request) {
	pool := r.URL.Query().Get("pool")
	list, err := a.engine.ListInstances(r.Context(), pool)
	if err != nil {
		a.fail(w, r, fmt.Errorf("list instances: %w", err))
		return
	}
	if list == nil {
		list = []*runner.Instance{}
	}
	writeJSON(w, http.StatusOK, list)
}

// getInstance answers GET /api/v1/instances/{name}, deleted instances
// included while their record is kept.
func (a *api) getInstance(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	inst, err := a.engine.GetInstance(r.Context(), name)
	if err != nil {
		a.fail(w, r, instanceError(name, err))
		return
	}
	writeJSON(w, http.StatusOK, inst)
}

// deleteInstance answers DELETE /api/v1/instances/{name}[?force=true]: 202
// with the instance as marked for delete (the worker deletes it next), 200
// when it was deleted already, 409 when GitHub says its runner is busy and
// force is not set.
func (a *api) deleteInstance(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	force := false
	if v := r.URL.Query().Get("force"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			writeError(w, http.StatusBadRequest, fmt.Sprintf("force=%q: want true or false", v))
			return
		}
		force = b
	}
	inst, err := a.engine.OperatorDelete(r.Context(), name, engine.DeleteMode(force))
	if err != nil {
		a.fail(w, r, instanceError(name, err))
		return
	}
	status := http.StatusAccepted
	if !inst.Status.Live() {
		status = http.StatusOK
	}
	writeJSON(w, status, inst)
}

// instanceError words a not-found error for the operator; every other error
// keeps its own (already specific) text.
func instanceError(name string, err error) error {
	if errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("instance %q not found: %w", name, err)
	}
	return err
}

// fail answers with the status the error calls for; server-side failures are
// logged, an operator's mistakes (404, 409) are not worth an error line.
func (a *api) fail(w http.ResponseWriter, r *http.Request, err error) {
	status := statusOf(err)
	if status >= 500 {
		a.log.ErrorContext(r.Context(), "operator API request failed", "method", r.Method, "path", r.URL.Path, "error", err)
	}
	writeError(w, status, err.Error())
}
