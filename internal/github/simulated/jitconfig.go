package simulated

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
)

// encodeJIT makes a JIT configuration in GitHub's shape, so whatever reads
// GitHub's — the metadata credentials endpoints, the runner itself — reads
// this one too: standard base64 of a JSON object whose keys are the files
// the runner keeps in its root (".runner", ".credentials",
// ".credentials_rsaparams") and whose values are the files' contents,
// standard base64 again. The secrets in it are random and worthless.
func encodeJIT(r *RegisteredRunner) string {
	files := map[string][]byte{
		".runner":                runnerFile(r),
		".credentials":           credentialsFile(),
		".credentials_rsaparams": rsaParamsFile(),
	}
	doc := make(map[string]string, len(files))
	for name, content := range files {
		doc[name] = base64.StdEncoding.EncodeToString(content)
	}
	raw, _ := json.Marshal(doc)
	return base64.StdEncoding.EncodeToString(raw)
}

// runnerFile is the runner's settings, indented and camel-cased as the
// runner writes .runner, so `grep '"agentId": *[0-9]*'` finds the id.
func runnerFile(r *RegisteredRunner) []byte {
	b, _ := json.MarshalIndent(struct {
		AgentID    int64  `json:"agentId"`
		AgentName  string `json:"agentName"`
		PoolID     int64  `json:"poolId"`
		PoolName   string `json:"poolName"`
		ServerURL  string `json:"serverUrl"`
		GitHubURL  string `json:"gitHubUrl"`
		WorkFolder string `json:"workFolder"`
		Ephemeral  bool   `json:"ephemeral"`
	}{
		AgentID: r.ID, AgentName: r.Name, PoolID: 1, PoolName: "Default",
		ServerURL:  "https://pipelines.actions.githubusercontent.com/simulated-" + randomHex(8),
		GitHubURL:  r.Owner.URL(),
		WorkFolder: "_work",
		Ephemeral:  true,
	}, "", "  ")
	return b
}

// credentialsFile is the runner's OAuth client registration.
func credentialsFile() []byte {
	b, _ := json.MarshalIndent(map[string]any{
		"scheme": "OAuth",
		"data": map[string]string{
			"clientId":                randomHex(16),
			"authorizationUrl":        "https://vstoken.actions.githubusercontent.com/_apis/oauth2/token/" + randomHex(16),
			"requireFipsCryptography": "False",
		},
	}, "", "  ")
	return b
}

// rsaParamsFile stands in for the runner's private key (the members of
// .NET's RSAParameters, base64): random bytes of the right sizes, not a
// key anyone could use.
func rsaParamsFile() []byte {
	member := func(n int) string { return base64.StdEncoding.EncodeToString(randomBytes(n)) }
	b, _ := json.Marshal(map[string]string{
		"d": member(256), "dp": member(128), "dq": member(128), "exponent": "AQAB",
		"inverseQ": member(128), "modulus": member(256), "p": member(128), "q": member(128),
	})
	return b
}

func randomBytes(n int) []byte {
	b := make([]byte, n)
	_, _ = rand.Read(b) // never fails (crypto/rand panics instead)
	return b
}

func randomHex(n int) string { return hex.EncodeToString(randomBytes(n)) }
