package metadata_test

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"math/big"
	"net/http"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/runfleet/runfleet/internal/engine"
	"github.com/runfleet/runfleet/internal/enginetest"
	"github.com/runfleet/runfleet/internal/metadata"
	"github.com/runfleet/runfleet/internal/runner"
	"github.com/runfleet/runfleet/internal/store"
)

// The whole happy path: the provider is handed a token and per-instance
// URLs (and no credentials); the machine fetches its JIT files and
// everything else it needs, reports installing and then idle; after idle
// its credentials are gone and its token is refused; the job completes and
// the instance is deleted.
func TestMachineBootstrapsWithItsToken(t *testing.T) {
	caPEM := testCertificate(t)
	h := newBootHarness(t, harnessOptions{caBundle: caPEM})
	name := h.queueJob(101)
	req := h.createRequest(name, 1)
	inst := h.WaitStatus(name, runner.StatusRunning)

	if req.InstanceToken == "" || !strings.HasSuffix(req.MetadataURL, "/metadata/"+name) || !strings.HasSuffix(req.CallbackURL, "/callbacks/"+name) {
		t.Fatalf("create request carries token %t, metadata URL %q, callback URL %q", req.InstanceToken != "", req.MetadataURL, req.CallbackURL)
	}
	if !req.JITConfigEnabled {
		t.Fatal("create request does not say jit_config_enabled")
	}
	jit := h.jitConfig(name, 1)
	files := jit.files
	requestJSON, _ := json.Marshal(req)
	for file, data := range files {
		if bytes.Contains(requestJSON, data) {
			t.Fatalf("the create request contains the JIT file %s", file)
		}
	}
	if bytes.Contains(requestJSON, []byte(jit.encoded[:40])) {
		t.Fatal("the create request contains the encoded JIT configuration")
	}

	m := h.machineFor(req)
	for endpoint, file := range map[string]string{
		"credentials/runner":                ".runner",
		"credentials/credentials":           ".credentials",
		"credentials/credentials_rsaparams": ".credentials_rsaparams",
	} {
		r := m.get(endpoint)
		if r.status != http.StatusOK || !bytes.Equal(r.body, files[file]) {
			t.Fatalf("GET %s = %d %q, want 200 and the %s file", endpoint, r.status, r.body, file)
		}
		if r.header.Get("Cache-Control") != "no-store" {
			t.Errorf("GET %s: Cache-Control %q, want no-store", endpoint, r.header.Get("Cache-Control"))
		}
	}
	if r := m.get("system/service-name"); r.status != http.StatusOK || string(r.body) != "actions.runner.octo-org-hello-world."+name {
		t.Fatalf("service-name = %d %q", r.status, r.body)
	}
	unit := m.get("systemd/unit-file?runAsUser=ubuntu")
	if unit.status != http.StatusOK || !strings.Contains(string(unit.body), "User=ubuntu\n") ||
		!strings.Contains(string(unit.body), "ExecStart=/home/ubuntu/actions-runner/runsvc.sh\n") {
		t.Fatalf("unit-file = %d\n%s", unit.status, unit.body)
	}
	if r := m.get("systemd/unit-file"); !strings.Contains(string(r.body), "User=runner\n") {
		t.Fatalf("unit-file without runAsUser does not default to runner:\n%s", r.body)
	}
	var bundle struct {
		RootCertificates map[string][]byte `json:"root_certificates"`
	}
	if r := m.get("system/cert-bundle"); r.status != http.StatusOK || json.Unmarshal(r.body, &bundle) != nil || len(bundle.RootCertificates) != 1 {
		t.Fatalf("cert-bundle = %d %s", r.status, r.body)
	}
	for _, pemBytes := range bundle.RootCertificates {
		if !bytes.Equal(pemBytes, caPEM) {
			t.Fatal("cert-bundle does not carry the configured certificate")
		}
	}
	var meta map[string]any
	if r := m.get("runner-metadata"); r.status != http.StatusOK || json.Unmarshal(r.body, &meta) != nil ||
		meta["name"] != name || meta["pool"] != enginetest.Pool || meta["jit_config_enabled"] != true || meta["metadata_url"] != req.MetadataURL {
		t.Fatalf("runner-metadata = %d %s", r.status, r.body)
	}
	script := m.get("install-script")
	if script.status != http.StatusOK || !strings.HasPrefix(string(script.body), "#!/bin/bash") ||
		!strings.Contains(string(script.body), req.MetadataURL) || !strings.Contains(string(script.body), req.InstanceToken) {
		t.Fatalf("install-script = %d (must name the metadata URL and carry the caller's token)", script.status)
	}
	checkShellSyntax(t, script.body)
	checkScriptToken(t, script.body, req.InstanceToken)
	if r := m.get("install-script?os=windows"); r.status != http.StatusNotImplemented {
		t.Fatalf("install-script for Windows = %d, want 501", r.status)
	}
	// Every runner is JIT: there is no registration token to hand out.
	if r := m.get("runner-registration-token/"); r.status != http.StatusForbidden || !strings.Contains(r.errorText(t), "just in time") {
		t.Fatalf("runner-registration-token = %d %s, want 403", r.status, r.body)
	}

	if r := m.report("installing", "downloading tools", nil); r.status != http.StatusOK {
		t.Fatalf("installing = %d %s", r.status, r.body)
	}
	if got := h.Instance(name).RunnerStatus; got != runner.RunnerInstalling {
		t.Fatalf("runner status after installing = %s", got)
	}
	// GARM's scripts send installing many times; only the first writes.
	version := h.Instance(name).Version
	if r := m.report("installing", "configuring runner", nil); r.status != http.StatusOK || h.Instance(name).Version != version {
		t.Fatalf("repeated installing = %d, version %d -> %d", r.status, version, h.Instance(name).Version)
	}
	sysinfo := m.do(http.MethodPost, req.CallbackURL+"/system-info/", []byte(`{"os_name": "Ubuntu", "os_version": "24.04", "agent_id": null}`))
	if sysinfo.status != http.StatusOK {
		t.Fatalf("system-info = %d %s", sysinfo.status, sysinfo.body)
	}
	if r := m.report("idle", "runner successfully installed", inst.GitHubRunnerID); r.status != http.StatusOK {
		t.Fatalf("idle = %d %s", r.status, r.body)
	}
	if got := h.Instance(name); got.RunnerStatus != runner.RunnerIdle || got.Status != runner.StatusRunning {
		t.Fatalf("after idle: %s / runner %s", got.Status, got.RunnerStatus)
	}
	if _, err := h.Store.GetRunnerCredentials(context.Background(), name); !errors.Is(err, store.ErrCredentialsNotFound) {
		t.Fatalf("credentials after idle: %v, want deleted", err)
	}
	// After idle the token is spent.
	for _, r := range []reply{m.get("credentials/runner"), m.report("installing", "again", nil)} {
		if r.status != http.StatusForbidden || !strings.Contains(r.errorText(t), "idle") {
			t.Fatalf("request after idle = %d %s, want 403 naming the idle runner", r.status, r.body)
		}
	}

	h.completeJob(101, name)
	h.WaitStatus(name, runner.StatusDeleted)
	if r := m.get("runner-metadata"); r.status != http.StatusForbidden || !strings.Contains(r.errorText(t), "deleted") {
		t.Fatalf("request for a deleted instance = %d %s, want 403", r.status, r.body)
	}
	requireNoSecretsLogged(t, h, req.InstanceToken, jit)
}

// A machine that cannot bootstrap says so; its instance goes to
// pending_delete with the message as fault, and the delete removes it. The
// job, still queued, gets its next instance.
func TestFailedBootstrapDeletesTheInstance(t *testing.T) {
	h := newBootHarness(t, harnessOptions{})
	name := h.queueJob(102)
	req := h.createRequest(name, 1)
	h.WaitStatus(name, runner.StatusRunning)
	m := h.machineFor(req)

	if r := m.report("installing", "downloading tools", nil); r.status != http.StatusOK {
		t.Fatalf("installing = %d %s", r.status, r.body)
	}
	r := m.report("failed", "failed to download tools", nil)
	if r.status != http.StatusOK {
		t.Fatalf("failed = %d %s", r.status, r.body)
	}
	var ack map[string]string
	_ = json.Unmarshal(r.body, &ack)
	if ack["runner_status"] != string(runner.RunnerFailed) || !strings.HasPrefix(ack["instance_status"], "pending_delete") && ack["instance_status"] != string(runner.StatusDeleting) {
		t.Fatalf("failed reply %s", r.body)
	}
	deleted := h.WaitStatus(name, runner.StatusDeleted)
	if !strings.Contains(deleted.ProviderFault, "failed to download tools") {
		t.Fatalf("fault of the deleted instance = %q, want the machine's message", deleted.ProviderFault)
	}
	next := h.WaitStatus(h.Job(102).InstanceFor(2), runner.StatusRunning)
	for _, m := range h.Provider.Machines() {
		if m.Name != next.Name {
			t.Fatalf("machine %s left after the failed bootstrap's delete", m.Name)
		}
	}
	for _, r := range h.GitHub.Runners() {
		if r.Name != next.Name {
			t.Fatalf("runner %s left in GitHub after the failed bootstrap's delete", r.Name)
		}
	}
	if r := m.get("credentials/runner"); r.status != http.StatusForbidden {
		t.Fatalf("credentials after a failed bootstrap = %d, want 403", r.status)
	}
}

// Every way a token can be wrong, and what each answer says.
func TestTokenRefusals(t *testing.T) {
	h := newBootHarness(t, harnessOptions{})
	a := h.queueJob(103)
	b := h.queueJob(104)
	reqA, reqB := h.createRequest(a, 1), h.createRequest(b, 1)
	h.WaitStatus(a, runner.StatusRunning)
	h.WaitStatus(b, runner.StatusRunning)
	machineA := h.machineFor(reqA)

	otherKey, err := metadata.NewTokens([]byte(strings.Repeat("x", 40)), enginetest.Controller, nil)
	if err != nil {
		t.Fatal(err)
	}
	forged, _ := otherKey.Mint(a, enginetest.Pool, 1, time.Hour)
	laterAttempt, _ := h.tokens.Mint(a, enginetest.Pool, 2, time.Hour)
	otherPool, _ := h.tokens.Mint(a, "gpu", 1, time.Hour)

	for _, tc := range []struct {
		name       string
		token      string
		url        string
		wantStatus int
		wantReason string
	}{
		{"no token", "", reqA.MetadataURL + "/credentials/runner", http.StatusUnauthorized, "missing instance token"},
		{"garbage", "not-a-token", reqA.MetadataURL + "/credentials/runner", http.StatusUnauthorized, "malformed"},
		{"other key", forged, reqA.MetadataURL + "/credentials/runner", http.StatusUnauthorized, "signature"},
		{"B's token on A's URL", reqB.InstanceToken, reqA.MetadataURL + "/credentials/runner", http.StatusForbidden, "is for instance"},
		{"A's token on B's callback", reqA.InstanceToken, reqB.CallbackURL + "/status", http.StatusForbidden, "is for instance"},
		{"later attempt", laterAttempt, reqA.MetadataURL + "/credentials/runner", http.StatusForbidden, "create attempt 2"},
		{"other pool", otherPool, reqA.MetadataURL + "/runner-metadata", http.StatusForbidden, "pool"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := &machine{t: t, token: tc.token}
			method, body := http.MethodGet, []byte(nil)
			if strings.HasSuffix(tc.url, "/status") {
				method, body = http.MethodPost, []byte(`{"status": "installing", "message": "x"}`)
			}
			r := m.do(method, tc.url, body)
			if r.status != tc.wantStatus || !strings.Contains(r.errorText(t), tc.wantReason) {
				t.Fatalf("%s = %d %s; want %d naming %q", tc.name, r.status, r.body, tc.wantStatus, tc.wantReason)
			}
			if challenge := r.header.Get("WWW-Authenticate"); (r.status == http.StatusUnauthorized) != strings.HasPrefix(challenge, "Bearer ") {
				t.Fatalf("%d answer with WWW-Authenticate %q; want a Bearer challenge exactly on 401", r.status, challenge)
			}
		})
	}
	// None of that moved either runner.
	for _, name := range []string{a, b} {
		if got := h.Instance(name).RunnerStatus; got != runner.RunnerPending {
			t.Fatalf("%s runner status %s after refused requests, want pending", name, got)
		}
	}

	// Expired: the token clock passes bootstrap timeout + 5 min.
	h.advanceTokenClock(10*time.Minute + engine.BootstrapMargin + time.Minute)
	if r := machineA.get("credentials/runner"); r.status != http.StatusUnauthorized || !strings.Contains(r.errorText(t), "expired") {
		t.Fatalf("expired token = %d %s, want 401 expired", r.status, r.body)
	}

	// Each refusal was logged once with the instance and the reason, and
	// the log never holds a token.
	refusals := h.Logs.Lines(t, map[string]any{"msg": "bootstrap request refused"})
	if len(refusals) != 8 {
		t.Fatalf("%d refusal log lines, want 8:\n%s", len(refusals), h.Logs.Tail(20))
	}
	for _, line := range refusals {
		if line["instance"] == nil || line["reason"] == nil || line["level"] != "WARN" {
			t.Fatalf("refusal log line lacks instance, reason or warn level: %v", line)
		}
	}
	for _, tok := range []string{reqA.InstanceToken, reqB.InstanceToken, forged, laterAttempt} {
		if strings.Contains(h.Logs.String(), tok) {
			t.Fatal("a token was logged")
		}
	}
}

// A create that fails and is retried gets a new attempt, new credentials
// and a new token; the first attempt's token is refused.
func TestTokenOfAnEarlierAttemptRefused(t *testing.T) {
	h := newBootHarness(t, harnessOptions{failFirstCreates: 1})
	name := h.queueJob(105)
	first := h.createRequest(name, 1)
	second := h.createRequest(name, 2)
	h.WaitStatus(name, runner.StatusRunning)
	if first.InstanceToken == second.InstanceToken {
		t.Fatal("the retried create reused the first attempt's token")
	}
	if r := h.machineFor(first).get("credentials/runner"); r.status != http.StatusForbidden || !strings.Contains(r.errorText(t), "create attempt 1") {
		t.Fatalf("first attempt's token = %d %s, want 403", r.status, r.body)
	}
	r := h.machineFor(second).get("credentials/runner")
	if r.status != http.StatusOK || !bytes.Equal(r.body, h.jitConfig(name, 2).files[".runner"]) {
		t.Fatalf("second attempt's credentials = %d %s", r.status, r.body)
	}
}

// Bad requests with a good token change nothing and say why.
func TestBadRequests(t *testing.T) {
	h := newBootHarness(t, harnessOptions{})
	name := h.queueJob(106)
	req := h.createRequest(name, 1)
	h.WaitStatus(name, runner.StatusRunning)
	m := h.machineFor(req)

	for _, tc := range []struct {
		what       string
		method     string
		url        string
		body       string
		wantStatus int
	}{
		{"status body not JSON", http.MethodPost, req.CallbackURL + "/status", `{"status": "installing", "message": "say "hi""}`, http.StatusBadRequest},
		{"unknown status", http.MethodPost, req.CallbackURL + "/status", `{"status": "running"}`, http.StatusBadRequest},
		{"agent id not a number", http.MethodPost, req.CallbackURL + "/status", `{"status": "idle", "agent_id": "abc"}`, http.StatusBadRequest},
		{"unit-file user injection", http.MethodGet, req.MetadataURL + "/systemd/unit-file?runAsUser=root%0AExecStartPre=/bin/sh", "", http.StatusBadRequest},
		{"GET on a callback", http.MethodGet, req.CallbackURL + "/status", "", http.StatusMethodNotAllowed},
		{"POST on metadata", http.MethodPost, req.MetadataURL + "/credentials/runner", "{}", http.StatusMethodNotAllowed},
		{"unknown credentials file", http.MethodGet, req.MetadataURL + "/credentials/.env", "", http.StatusNotFound},
		{"unknown route", http.MethodGet, req.MetadataURL + "/secrets", "", http.StatusNotFound},
		{"no instance", http.MethodGet, strings.TrimSuffix(req.MetadataURL, name) + "credentials/runner", "", http.StatusNotFound},
	} {
		var body []byte
		if tc.body != "" {
			body = []byte(tc.body)
		}
		r := m.do(tc.method, tc.url, body)
		if r.status != tc.wantStatus {
			t.Errorf("%s = %d %s, want %d", tc.what, r.status, r.body, tc.wantStatus)
			continue
		}
		r.errorText(t)
	}
	if got := h.Instance(name); got.RunnerStatus != runner.RunnerPending || got.Status != runner.StatusRunning {
		t.Fatalf("bad requests changed the instance: %s / runner %s", got.Status, got.RunnerStatus)
	}
	// A numeric-string agent id, as hand-written scripts send, is fine.
	if r := m.do(http.MethodPost, req.CallbackURL+"/status", []byte(`{"status": "idle", "agent_id": "77"}`)); r.status != http.StatusOK {
		t.Fatalf("idle with a string agent id = %d %s", r.status, r.body)
	}
}

// idle and failed racing for one instance: exactly one wins, the other is
// refused, and the instance ends in the winner's state.
func TestConcurrentCallbacksOneWinner(t *testing.T) {
	h := newBootHarness(t, harnessOptions{})
	name := h.queueJob(107)
	req := h.createRequest(name, 1)
	h.WaitStatus(name, runner.StatusRunning)
	m := h.machineFor(req)

	statuses := []string{"idle", "failed", "idle", "failed", "idle", "failed"}
	codes := make([]int, len(statuses))
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i, s := range statuses {
		wg.Go(func() {
			<-start
			codes[i] = m.report(s, "race", nil).status
		})
	}
	close(start)
	wg.Wait()
	wins := map[string]int{}
	for i, code := range codes {
		switch code {
		case http.StatusOK:
			wins[statuses[i]]++
		case http.StatusForbidden:
		default:
			t.Fatalf("callback %s answered %d", statuses[i], code)
		}
	}
	if len(wins) != 1 || (wins["failed"] != 1 && wins["idle"] != 1) {
		t.Fatalf("winners %v, want exactly one callback to win", wins)
	}
	got := h.Instance(name)
	if wins["idle"] == 1 && got.RunnerStatus != runner.RunnerIdle {
		t.Fatalf("idle won but the runner is %s", got.RunnerStatus)
	}
	if wins["failed"] == 1 && got.RunnerStatus != runner.RunnerFailed && got.Status != runner.StatusDeleted {
		t.Fatalf("failed won but the instance is %s / runner %s", got.Status, got.RunnerStatus)
	}
}

func requireNoSecretsLogged(t *testing.T, h *bootHarness, token string, jit jitConfig) {
	t.Helper()
	logs := h.Logs.String()
	if strings.Contains(logs, token) {
		t.Fatal("the instance token was logged")
	}
	for name, data := range jit.files {
		if strings.Contains(logs, string(data)) {
			t.Fatalf("the JIT file %s was logged", name)
		}
	}
	if strings.Contains(logs, jit.encoded[:40]) {
		t.Fatal("the encoded JIT configuration was logged")
	}
}

// checkShellSyntax runs bash -n on the install script when bash exists.
func checkShellSyntax(t *testing.T, script []byte) {
	t.Helper()
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Log("bash not found; install script syntax not checked")
		return
	}
	cmd := exec.Command(bash, "-n")
	cmd.Stdin = bytes.NewReader(script)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("install script is not valid bash: %v\n%s", err, out)
	}
}

// checkScriptToken runs the install script's preamble (up to its token
// check) in bash and compares the token it settles on with the one the
// request presented: the quoting must give the token back byte for byte.
func checkScriptToken(t *testing.T, script []byte, want string) {
	t.Helper()
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Log("bash not found; install script token not checked")
		return
	}
	preamble, _, ok := strings.Cut(string(script), "if [ -z \"$TOKEN\" ]")
	if !ok {
		t.Fatal("install script has no token check")
	}
	cmd := exec.Command(bash, "-c", preamble+`printf %s "$TOKEN"`)
	cmd.Env = []string{"PATH=/usr/bin:/bin"}
	out, err := cmd.CombinedOutput()
	if err != nil || string(out) != want {
		t.Fatalf("install script preamble gives token %q (%v), want the presented one", out, err)
	}
}

func testCertificate(t *testing.T) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(0xfeed), Subject: pkix.Name{CommonName: "runfleet test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}
