package metadata

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/runfleet/runfleet/internal/store"
)

// jitFiles decodes GitHub's encoded_jit_config into the files it carries.
// Its shape, as the runner itself reads it (actions/runner,
// src/Runner.Listener/Runner.cs, the --jitconfig branch): standard base64
// of a JSON object whose keys are file names in the runner's root
// (".runner", ".credentials", ".credentials_rsaparams") and whose values are
// the files' contents, standard base64 again.
func jitFiles(encoded string) (map[string][]byte, error) {
	doc, err := base64.StdEncoding.DecodeString(encoded)
	if err != nil {
		return nil, fmt.Errorf("JIT configuration is not base64: %w", err)
	}
	var entries map[string]json.RawMessage
	if err := json.Unmarshal(doc, &entries); err != nil {
		return nil, errors.New("JIT configuration is not a JSON object")
	}
	out := make(map[string][]byte, len(entries))
	for name, raw := range entries {
		// Only string members are files; anything else is not a file
		// the runner writes, so it is not ours to serve (GitHub sends
		// none today, but a later runner version may add some).
		var content string
		if json.Unmarshal(raw, &content) != nil {
			continue
		}
		data, err := base64.StdEncoding.DecodeString(content)
		if err != nil {
			return nil, fmt.Errorf("JIT configuration file %s is not base64: %w", name, err)
		}
		out[name] = data
	}
	return out, nil
}

// credentialFile serves one file of the instance's JIT configuration, as
// the bytes the runner expects on disk. The file is never logged.
func credentialFile(name string) func(h *Handler, w http.ResponseWriter, r *http.Request, req *request) {
	return func(h *Handler, w http.ResponseWriter, r *http.Request, req *request) {
		encoded, err := h.engine.RunnerCredentials(r.Context(), req.claim)
		if errors.Is(err, store.ErrCredentialsNotFound) {
			h.refuse(w, req.log, http.StatusNotFound, "no runner credentials are stored for this create attempt (expired, or already used)")
			return
		}
		if err != nil {
			status, reason := h.engineRefusal(err, req.log)
			h.refuse(w, req.log, status, reason)
			return
		}
		files, err := jitFiles(encoded)
		if err != nil {
			// Say what is wrong with the document, never what is in it.
			req.log.Error("stored JIT configuration cannot be decoded", "error", err)
			h.refuse(w, req.log, http.StatusInternalServerError, "the stored runner configuration cannot be decoded")
			return
		}
		data, ok := files[name]
		if !ok {
			h.refuse(w, req.log, http.StatusNotFound, "the runner configuration has no "+name+" file")
			return
		}
		w.Header().Set("Content-Disposition", "attachment; filename="+name)
		writeText(w, "application/octet-stream", data)
		req.log.Info("runner credentials file served", "file", name, "bytes", len(data))
	}
}

// registrationToken refuses, always: runfleet registers every runner just
// in time, so there is no registration token to hand out. GARM refuses the
// same request for its JIT instances (with a 401).
func (h *Handler) registrationToken(w http.ResponseWriter, _ *http.Request, req *request) {
	h.refuse(w, req.log, http.StatusForbidden,
		"runfleet registers every runner just in time and hands out no registration token: "+
			"fetch credentials/runner, credentials/credentials and credentials/credentials_rsaparams instead")
}
