package githubtest

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"net/http"
	"strings"
)

// webhookAPIBase is the API base GitHub's webhook payloads link to.
const webhookAPIBase = "https://api.github.com"

type webhookAccount struct {
	Login string `json:"login"`
	ID    int64  `json:"id"`
	Type  string `json:"type,omitempty"`
}

type webhookRepository struct {
	ID       int64          `json:"id"`
	NodeID   string         `json:"node_id"`
	Name     string         `json:"name"`
	FullName string         `json:"full_name"`
	Private  bool           `json:"private"`
	Owner    webhookAccount `json:"owner"`
}

type webhookEnterprise struct {
	Slug string `json:"slug"`
	ID   int64  `json:"id"`
}

type webhookInstallation struct {
	ID     int64  `json:"id"`
	NodeID string `json:"node_id"`
}

type workflowJobWebhook struct {
	Action       string               `json:"action"`
	WorkflowJob  jobJSON              `json:"workflow_job"`
	Repository   webhookRepository    `json:"repository"`
	Organization *webhookAccount      `json:"organization,omitempty"`
	Enterprise   *webhookEnterprise   `json:"enterprise,omitempty"`
	Sender       webhookAccount       `json:"sender"`
	Installation *webhookInstallation `json:"installation,omitempty"`
}

// WorkflowJobWebhook is the workflow_job delivery body GitHub would send
// for the job as it stands now (move it first with StartJob, FinishJob):
// runner fields null until a runner took it, organization present when the
// repository's owner was added with AddOrg, enterprise when enterprise is
// not "", installation when installationID is not 0. action is sent as
// given ("queued", "in_progress", "completed", "waiting").
func (s *Server) WorkflowJobWebhook(jobID int64, action, enterprise string, installationID int64) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	j, ok := s.jobs[jobID]
	if !ok {
		return nil, fmt.Errorf("githubtest: job %d was never added (AddJob)", jobID)
	}
	ownerLogin, repoName, _ := strings.Cut(j.Repo, "/")
	ev := workflowJobWebhook{
		Action:      action,
		WorkflowJob: s.jobJSON(&request{apiBase: webhookAPIBase}, j),
		Repository: webhookRepository{
			ID: stableID(j.Repo), NodeID: "R_" + j.Repo, Name: repoName, FullName: j.Repo,
			Owner: webhookAccount{Login: ownerLogin, ID: stableID(ownerLogin), Type: "User"},
		},
		Sender: webhookAccount{Login: "octocat", ID: 1, Type: "User"},
	}
	if o, ok := s.owners[ownerIndex(ownerLogin)]; ok && o.kind == kindOrg {
		ev.Repository.Owner.Type = "Organization"
		ev.Organization = &webhookAccount{Login: o.key, ID: stableID(o.key)}
	}
	if enterprise != "" {
		ev.Enterprise = &webhookEnterprise{Slug: enterprise, ID: stableID("enterprise:" + enterprise)}
	}
	if installationID != 0 {
		ev.Installation = &webhookInstallation{ID: installationID, NodeID: fmt.Sprintf("MDIzOkludGVncmF0aW9uSW5zdGFsbGF0aW9u%d", installationID)}
	}
	return json.Marshal(ev)
}

// stableID gives accounts and repositories the same id on every run.
func stableID(name string) int64 {
	h := fnv.New32a()
	_, _ = h.Write([]byte(strings.ToLower(name)))
	return int64(h.Sum32()) + 1
}

// WebhookRequest builds the POST GitHub's webhook sender makes: the body
// signed with secret (X-Hub-Signature-256), the event and delivery id
// headers, GitHub's user agent and a JSON content type.
func WebhookRequest(url string, secret []byte, event, deliveryID string, body []byte) (*http.Request, error) {
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("githubtest: webhook request: %w", err)
	}
	mac := hmac.New(sha256.New, secret)
	mac.Write(body)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "GitHub-Hookshot/044aadd")
	req.Header.Set("X-GitHub-Event", event)
	req.Header.Set("X-GitHub-Delivery", deliveryID)
	req.Header.Set("X-GitHub-Hook-ID", "1")
	req.Header.Set("X-Hub-Signature-256", "sha256="+hex.EncodeToString(mac.Sum(nil)))
	return req, nil
}
