package scalesettest

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
)

// encodedJITConfigLocked is a runner's JIT configuration in GitHub's
// shape, the one the runner itself reads (and runfleet's metadata
// endpoint serves file by file): standard base64 of a JSON object whose
// keys are the files the runner keeps in its root (".runner",
// ".credentials", ".credentials_rsaparams") and whose values are the
// files' contents, base64 again. The secrets are placeholders, unique
// per runner.
func (s *Server) encodedJITConfigLocked(rr *runnerRecord, workFolder string) string {
	if workFolder == "" {
		workFolder = "_work"
	}
	secret := s.newIDLocked("secret")
	runnerFile, _ := json.MarshalIndent(map[string]any{
		"agentId": rr.id, "agentName": rr.name, "poolId": 1, "poolName": "Default",
		"serverUrl": s.ServiceURL(), "workFolder": workFolder, "ephemeral": true,
		"runnerScaleSetId": rr.setID,
	}, "", "  ")
	credentials, _ := json.MarshalIndent(map[string]any{
		"scheme": "OAuth",
		"data": map[string]string{
			"clientId":         secret,
			"authorizationUrl": fmt.Sprintf("%s_apis/oauth2/token/%s", s.ServiceURL(), secret),
		},
	}, "", "  ")
	rsaParams, _ := json.Marshal(map[string]string{
		"exponent": "AQAB", "modulus": base64.StdEncoding.EncodeToString([]byte(secret)),
	})
	files, _ := json.Marshal(map[string]string{
		".runner":                base64.StdEncoding.EncodeToString(runnerFile),
		".credentials":           base64.StdEncoding.EncodeToString(credentials),
		".credentials_rsaparams": base64.StdEncoding.EncodeToString(rsaParams),
	})
	return base64.StdEncoding.EncodeToString(files)
}
