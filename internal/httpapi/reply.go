package httpapi

import (
	"encoding/json"
	"errors"
	"net/http"

	"github.com/runfleet/runfleet/internal/engine"
	"github.com/runfleet/runfleet/internal/runner"
	"github.com/runfleet/runfleet/internal/store"
)

// ErrorBody is the JSON of every error answer.
type ErrorBody struct {
	Error  string `json:"error"`
	Status int    `json:"status"`
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}

func writeError(w http.ResponseWriter, status int, message string) {
	writeJSON(w, status, ErrorBody{Error: message, Status: status})
}

// statusOf maps an engine or store error to the HTTP status an operator
// should see.
func statusOf(err error) int {
	var busy *engine.BusyError
	var illegal *runner.IllegalTransitionError
	switch {
	case errors.Is(err, store.ErrNotFound):
		return http.StatusNotFound
	case errors.As(err, &busy), errors.As(err, &illegal), errors.Is(err, store.ErrConflict):
		return http.StatusConflict
	case errors.Is(err, engine.ErrDeletedNotListed):
		return http.StatusNotImplemented
	default:
		return http.StatusInternalServerError
	}
}
