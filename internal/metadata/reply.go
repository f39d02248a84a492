package metadata

import (
	"encoding/json"
	"log/slog"
	"net/http"
)

// errorReply is every refusal's body, the shape the operator API uses.
type errorReply struct {
	Error  string `json:"error"`
	Status int    `json:"status"`
}

// refuse answers with a JSON error and logs one warning naming the reason
// (the logger already names the instance and endpoint).
func (h *Handler) refuse(w http.ResponseWriter, log *slog.Logger, status int, reason string) {
	log.Warn("bootstrap request refused", "status", status, "reason", reason)
	writeJSON(w, status, errorReply{Error: reason, Status: status})
}

func (h *Handler) notFound(w http.ResponseWriter, r *http.Request) {
	h.refuse(w, h.log.With("path", r.URL.Path), http.StatusNotFound,
		"no such bootstrap route: "+r.Method+" "+r.URL.Path)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	noStore(w, "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func writeText(w http.ResponseWriter, contentType string, body []byte) {
	noStore(w, contentType)
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(body)
}

// noStore: nothing here may sit in a proxy's or the machine's cache.
func noStore(w http.ResponseWriter, contentType string) {
	w.Header().Set("Content-Type", contentType)
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Content-Type-Options", "nosniff")
}
