package metadata_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/runfleet/runfleet/internal/engine"
	"github.com/runfleet/runfleet/internal/enginetest"
	"github.com/runfleet/runfleet/internal/runner"
	"github.com/runfleet/runfleet/internal/store"
	"github.com/runfleet/runfleet/providers/external"
)

// End to end through a GARM external provider: a signed queued webhook →
// the worker creates the instance through providers/external, whose
// executable reads BootstrapInstance from stdin and, acting as the machine,
// fetches its JIT credentials with the instance-token and reports
// installing, system info and idle → the completed webhook deletes it. Then
// a token for another instance, an expired one and one used after idle are
// all refused.
func TestExternalProviderMachineBootstraps(t *testing.T) {
	boot := enginetest.BuildBootProvider(t)
	machines := boot.Machines
	settings, err := external.ParseSettings(map[string]any{
		"provider_executable": boot.Executable, "config_file": boot.ConfigFile, "timeout": "30s", "os_type": "linux", "arch": "amd64",
	})
	if err != nil {
		t.Fatal(err)
	}
	// The provider serves the pool's id, derived from a fixed installation.
	const installation = "metadata-e2e"
	prov, err := external.New(settings, external.Options{ControllerID: enginetest.Controller, PoolID: runner.PoolID(installation, enginetest.Pool)})
	if err != nil {
		t.Fatal(err)
	}
	h := newBootHarness(t, harnessOptions{provider: prov, installationID: installation})

	h.deliver("queued", 301, "")
	h.deliver("queued", 302, "")
	a, b := enginetest.InstanceName(301), enginetest.InstanceName(302)
	instA := h.WaitStatus(a, runner.StatusRunning)
	h.WaitStatus(b, runner.StatusRunning)
	recA, recB := boot.Record(t, a), boot.Record(t, b)

	// The provider got a working token and per-instance URLs, and never
	// the credentials themselves.
	var bi map[string]any
	if err := json.Unmarshal([]byte(recA.Stdin), &bi); err != nil {
		t.Fatalf("BootstrapInstance on stdin: %v", err)
	}
	if bi["instance-token"] == "" || bi["metadata-url"] != recA.MetadataURL || bi["jit_config_enabled"] != true ||
		!strings.HasSuffix(recA.MetadataURL, "/metadata/"+a) || !strings.HasSuffix(recA.CallbackURL, "/callbacks/"+a) {
		t.Fatalf("BootstrapInstance: token %t, metadata-url %v, callback-url %v, jit %v",
			bi["instance-token"] != "", bi["metadata-url"], bi["callback-url"], bi["jit_config_enabled"])
	}
	jit := h.jitConfig(a, 1)
	if len(jit.files) != 3 || !bytes.Contains(jit.files[".runner"], []byte(fmt.Sprintf(`"agentId": %d,`, instA.GitHubRunnerID))) {
		t.Fatalf("the stored JIT configuration is not runner %d's three files: %q", instA.GitHubRunnerID, jit.files)
	}
	for name, data := range jit.files {
		if strings.Contains(recA.Stdin, string(data)) {
			t.Fatalf("BootstrapInstance carries the JIT file %s", name)
		}
		if recA.Files[name] != string(data) {
			t.Fatalf("the machine fetched %s = %q, want the JIT file", name, recA.Files[name])
		}
	}
	for step, code := range recA.Statuses {
		if code != http.StatusOK {
			t.Fatalf("machine step %s answered %d (all: %v)", step, code, recA.Statuses)
		}
	}
	if len(recA.Statuses) != 8 {
		t.Fatalf("machine made %d calls %v, want 8", len(recA.Statuses), recA.Statuses)
	}
	if recA.ServiceName != "actions.runner.octo-org-hello-world."+a || !strings.Contains(recA.UnitFile, "User=runner") {
		t.Fatalf("service name %q, unit file:\n%s", recA.ServiceName, recA.UnitFile)
	}

	// The machine's idle was recorded (during the create: the instance was
	// still creating) and survived the create's own final write.
	got := h.Instance(a)
	if got.RunnerStatus != runner.RunnerIdle || !strings.HasPrefix(got.ProviderID, "fk-") {
		t.Fatalf("instance after bootstrap: runner %s, provider id %q", got.RunnerStatus, got.ProviderID)
	}
	if _, err := h.Store.GetRunnerCredentials(context.Background(), a); !errors.Is(err, store.ErrCredentialsNotFound) {
		t.Fatalf("credentials after idle: %v, want deleted", err)
	}

	// Refusals: after idle, for another instance, expired.
	machineA := &machine{t: t, token: recA.Token, metadataURL: recA.MetadataURL, callbackURL: recA.CallbackURL}
	if r := machineA.get("credentials/runner"); r.status != http.StatusForbidden {
		t.Fatalf("token used after idle = %d %s, want 403", r.status, r.body)
	}
	crossed := &machine{t: t, token: recA.Token, metadataURL: recB.MetadataURL}
	if r := crossed.get("credentials/runner"); r.status != http.StatusForbidden || !strings.Contains(r.errorText(t), "is for instance") {
		t.Fatalf("A's token on B's URL = %d %s, want 403", r.status, r.body)
	}
	h.advanceTokenClock(10*time.Minute + engine.BootstrapMargin + time.Minute)
	if r := machineA.get("runner-metadata"); r.status != http.StatusUnauthorized || !strings.Contains(r.errorText(t), "expired") {
		t.Fatalf("expired token = %d %s, want 401", r.status, r.body)
	}

	// The job runs and completes; the instance and its machine go.
	h.deliver("completed", 301, a)
	h.WaitStatus(a, runner.StatusDeleted)
	if _, err := os.Stat(filepath.Join(machines, a+".json")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("machine file of the deleted instance: %v, want it removed by DeleteInstance", err)
	}
	requireNoSecretsLogged(t, h, recA.Token, jit)
}
