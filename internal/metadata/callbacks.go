package metadata

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/runfleet/runfleet/internal/engine"
)

// statusCallback is GARM's POST {callback-url}/status body.
type statusCallback struct {
	Status  string  `json:"status"`
	Message string  `json:"message"`
	AgentID agentID `json:"agent_id"`
}

// systemInfoCallback is GARM's POST {callback-url}/system-info body.
type systemInfoCallback struct {
	OSName    string  `json:"os_name"`
	OSVersion string  `json:"os_version"`
	AgentID   agentID `json:"agent_id"`
}

// agentID is the GitHub runner id a machine reports: a JSON number, null,
// or (from hand-written scripts) a numeric string; 0 means none.
type agentID int64

func (a *agentID) UnmarshalJSON(data []byte) error {
	text := strings.Trim(string(bytes.TrimSpace(data)), `"`)
	if text == "" || text == "null" {
		*a = 0
		return nil
	}
	n, err := strconv.ParseInt(text, 10, 64)
	if err != nil || n < 0 {
		return fmt.Errorf("agent_id %s is not a runner id", data)
	}
	*a = agentID(n)
	return nil
}

// decodeCallback reads a bounded JSON body into v.
func decodeCallback(r *http.Request, v any) error {
	body, err := io.ReadAll(io.LimitReader(r.Body, maxCallbackBody+1))
	if err != nil {
		return fmt.Errorf("reading the body failed: %v", err)
	}
	if len(body) > maxCallbackBody {
		return fmt.Errorf("body is larger than %d bytes", maxCallbackBody)
	}
	if err := json.Unmarshal(body, v); err != nil {
		return fmt.Errorf("body is not the expected JSON: %v", err)
	}
	return nil
}

// statusReply is a successful callback's answer.
type statusReply struct {
	Status       string `json:"status"`
	Instance     string `json:"instance"`
	RunnerStatus string `json:"runner_status"`
	State        string `json:"instance_status"`
}

func (h *Handler) status(w http.ResponseWriter, r *http.Request, req *request) {
	var cb statusCallback
	if err := decodeCallback(r, &cb); err != nil {
		h.refuse(w, req.log, http.StatusBadRequest, err.Error())
		return
	}
	switch engine.ReportStatus(cb.Status) {
	case engine.ReportInstalling, engine.ReportIdle, engine.ReportFailed:
	default:
		h.refuse(w, req.log, http.StatusBadRequest, fmt.Sprintf("status %q is not one of installing, idle, failed", cb.Status))
		return
	}
	inst, err := h.engine.ReportRunnerStatus(r.Context(), req.claim, engine.RunnerReport{
		Status: engine.ReportStatus(cb.Status), Message: cb.Message, AgentID: int64(cb.AgentID),
	})
	if err != nil && inst == nil {
		status, reason := h.engineRefusal(err, req.log)
		h.refuse(w, req.log.With("reported_status", cb.Status), status, reason)
		return
	}
	if err != nil {
		// The status is written; only the follow-up (enqueueing a delete)
		// failed, which the reconciler repairs. The machine did its part.
		req.log.Warn("runner status recorded, follow-up failed", "error", err)
	}
	writeJSON(w, http.StatusOK, statusReply{
		Status: "ok", Instance: inst.Name, RunnerStatus: string(inst.RunnerStatus), State: string(inst.Status),
	})
}

// systemInfo records nothing (runfleet's instance record has no OS fields);
// it logs what the machine says, which is what an operator debugging a
// bootstrap wants, and answers so the script goes on.
func (h *Handler) systemInfo(w http.ResponseWriter, r *http.Request, req *request) {
	var cb systemInfoCallback
	if err := decodeCallback(r, &cb); err != nil {
		h.refuse(w, req.log, http.StatusBadRequest, err.Error())
		return
	}
	req.log.Info("runner machine system info",
		"os_name", truncateText(cb.OSName, 128), "os_version", truncateText(cb.OSVersion, 128), "agent_id", int64(cb.AgentID))
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok", "instance": req.instance.Name})
}

func truncateText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "")
}
