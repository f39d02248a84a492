package httpapi

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/runfleet/runfleet/internal/engine"
	"github.com/runfleet/runfleet/internal/runner"
	"github.com/runfleet/runfleet/internal/store"
)

// listInstances answers
// GET /api/v1/instances[?pool=P][&status=S,S…][&deleted=true]: the live
// instances, and with deleted=true (or status=deleted) the deleted ones the
// store still keeps (store.DeletedRetention), most recently deleted first
// after the live ones; pool and status filters apply to both. A store that
// cannot list deleted instances (DynamoDB) answers 501.
func (a *api) listInstances(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	statuses, err := parseStatuses(q["status"])
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	withDeleted, err := parseDeleted(q.Get("deleted"), statuses)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	pool := q.Get("pool")
	var list []*runner.Instance
	// Asked for deleted ones only, the live index need not be read.
	if len(statuses) == 0 || slices.ContainsFunc(statuses, runner.Status.Live) {
		if list, err = a.engine.ListInstances(r.Context(), pool); err != nil {
			a.fail(w, r, fmt.Errorf("list instances: %w", err))
			return
		}
	}
	if withDeleted {
		deleted, err := a.engine.ListDeletedInstances(r.Context(), pool)
		if err != nil {
			a.fail(w, r, deletedError(err))
			return
		}
		list = append(list, deleted...)
	}
	out := make([]*runner.Instance, 0, len(list))
	for _, in := range list {
		if len(statuses) == 0 || slices.Contains(statuses, in.Status) {
			out = append(out, in)
		}
	}
	writeJSON(w, http.StatusOK, out)
}

// parseDeleted reads deleted=: status=deleted asks for them too, and
// contradicts an explicit deleted=false.
func parseDeleted(v string, statuses []runner.Status) (bool, error) {
	asked := slices.Contains(statuses, runner.StatusDeleted)
	if v == "" {
		return asked, nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, fmt.Errorf("deleted=%q: want true or false", v)
	}
	if asked && !b {
		return false, errors.New("status=deleted with deleted=false: drop one of them")
	}
	return b, nil
}

// deletedError words the store's inability for the operator, with what
// to do instead; any other error keeps its own text.
func deletedError(err error) error {
	if errors.Is(err, engine.ErrDeletedNotListed) {
		return &deletedNotListedError{err: err}
	}
	return fmt.Errorf("list deleted instances: %w", err)
}

// deletedNotListedError says once what the engine's chain says twice; it
// still matches engine.ErrDeletedNotListed for statusOf.
type deletedNotListedError struct{ err error }

func (e *deletedNotListedError) Error() string {
	return fmt.Sprintf("this server's store cannot list deleted instances (on DynamoDB it would scan the whole table); read one by name, GET %sinstances/{name}, while its record is kept (%s)",
		Prefix, DeletedRetentionText())
}

func (e *deletedNotListedError) Unwrap() error { return e.err }

// parseStatuses reads status filters, each one name or a comma-separated
// list; it refuses names that are no status.
func parseStatuses(values []string) ([]runner.Status, error) {
	var out []runner.Status
	for _, v := range values {
		list, err := runner.ParseStatuses(v)
		if err != nil {
			return nil, fmt.Errorf("status=%w", err)
		}
		out = append(out, list...)
	}
	return out, nil
}

// DeletedRetentionText words store.DeletedRetention for messages.
func DeletedRetentionText() string {
	return fmt.Sprintf("%d days", int(store.DeletedRetention/(24*time.Hour)))
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
		return &notFoundError{name: name, err: err}
	}
	return err
}

// notFoundError says only which instance is missing: the store's chain
// under it ("bolt: instance …: store: instance not found") says it twice
// more. It still matches store.ErrNotFound for statusOf.
type notFoundError struct {
	name string
	err  error
}

func (e *notFoundError) Error() string { return fmt.Sprintf("instance %q not found", e.name) }
func (e *notFoundError) Unwrap() error { return e.err }

// fail answers with the status the error calls for; server-side failures are
// logged, an operator's mistakes (404, 409) are not worth an error line.
func (a *api) fail(w http.ResponseWriter, r *http.Request, err error) {
	status := statusOf(err)
	// 501 is this server's store lacking an ability, not a failure.
	if status >= 500 && status != http.StatusNotImplemented {
		a.log.ErrorContext(r.Context(), "operator API request failed", "method", r.Method, "path", r.URL.Path, "error", err)
	}
	writeError(w, status, err.Error())
}
