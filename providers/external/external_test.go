package external_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/runfleet/runfleet/providers"
	"github.com/runfleet/runfleet/providers/external"
	"github.com/runfleet/runfleet/providers/external/externaltest"
)

func createRequest(name string) providers.CreateRequest {
	return providers.CreateRequest{
		Name:             name,
		Pool:             testPool,
		PoolID:           testPoolID,
		Labels:           []string{"self-hosted", "linux", "arm64"},
		RunnerGroup:      "ci",
		RepoURL:          "https://github.com/octo-org",
		MetadataURL:      "https://runfleet.example/metadata",
		CallbackURL:      "https://runfleet.example/callbacks",
		InstanceToken:    "tok-123",
		JITConfigEnabled: true,
	}
}

func TestLifecycleThroughTheProtocol(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, externaltest.Config{}, nil)
	p := f.provider

	in, err := p.CreateInstance(ctx, createRequest("runfleet-pool-a-1-1"))
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	if in.ProviderID != "fk-1" || in.Name != "runfleet-pool-a-1-1" || in.Status != providers.StatusRunning || in.OSName != "fakeos" {
		t.Fatalf("created %+v", in)
	}
	got, err := p.GetInstance(ctx, in.ProviderID)
	if err != nil || got.ProviderID != in.ProviderID || got.Name != in.Name {
		t.Fatalf("get = %+v, %v", got, err)
	}
	if err := p.StopInstance(ctx, in.ProviderID); err != nil {
		t.Fatalf("stop: %v", err)
	}
	if got, _ := p.GetInstance(ctx, in.Name); got.Status != providers.StatusStopped {
		t.Fatalf("after StopInstance, status %q", got.Status)
	}
	if err := p.StartInstance(ctx, in.ProviderID); err != nil {
		t.Fatalf("start: %v", err)
	}
	list, err := p.ListInstances(ctx, testPoolID)
	if err != nil || len(list) != 1 || list[0].ProviderID != in.ProviderID || list[0].Status != providers.StatusRunning {
		t.Fatalf("list = %+v, %v", list, err)
	}
	if v, err := p.GetVersion(ctx); err != nil || v != "v0.1.0-fake" {
		t.Fatalf("version = %q, %v", v, err)
	}
	if err := p.DeleteInstance(ctx, in.ProviderID); err != nil {
		t.Fatalf("delete: %v", err)
	}
	if len(f.machines()) != 0 {
		t.Fatalf("machines left: %+v", f.machines())
	}

	var commands []string
	for _, r := range f.records() {
		commands = append(commands, r.Command)
	}
	want := []string{"CreateInstance", "GetInstance", "StopInstance", "GetInstance", "StartInstance",
		"ListInstances", "GetVersion", "DeleteInstance"}
	if !slices.Equal(commands, want) {
		t.Errorf("commands = %v, want %v", commands, want)
	}
}

func TestDeleteOfAMissingMachineIsSuccess(t *testing.T) {
	f := newFixture(t, externaltest.Config{}, nil)
	if err := f.provider.DeleteInstance(context.Background(), "fk-404"); err != nil {
		t.Fatalf("delete of a missing machine (exit 30) = %v, want nil", err)
	}
	if r := f.lastRecord(); r.Command != "DeleteInstance" || r.Env["GARM_INSTANCE_ID"] != "fk-404" {
		t.Fatalf("call %+v", r)
	}
}

func TestGetOfAMissingMachineIsNotFound(t *testing.T) {
	f := newFixture(t, externaltest.Config{}, nil)
	_, err := f.provider.GetInstance(context.Background(), "fk-404")
	if !errors.Is(err, providers.ErrNotFound) {
		t.Fatalf("get of a missing machine = %v, want providers.ErrNotFound", err)
	}
	var exit *external.ExitError
	if !errors.As(err, &exit) || exit.Code != 30 {
		t.Fatalf("err = %v, want *ExitError 30", err)
	}
}

func TestDuplicateCreateIsErrDuplicate(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, externaltest.Config{}, nil)
	if _, err := f.provider.CreateInstance(ctx, createRequest("m-1")); err != nil {
		t.Fatal(err)
	}
	_, err := f.provider.CreateInstance(ctx, createRequest("m-1"))
	if !errors.Is(err, external.ErrDuplicate) || errors.Is(err, providers.ErrNotFound) {
		t.Fatalf("second create = %v, want ErrDuplicate (exit 31)", err)
	}
}

func TestNonZeroExitIgnoresStdoutAndKeepsTheOutputAsFault(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, externaltest.Config{Fail: map[string]int{"CreateInstance": 1, "GetInstance": 2, "DeleteInstance": 3}}, nil)

	in, err := f.provider.CreateInstance(ctx, createRequest("m-1"))
	var pe *providers.Error
	if !errors.As(err, &pe) {
		t.Fatalf("create = %+v, %v; want a *providers.Error", in, err)
	}
	// The fake printed a valid instance before failing: it must be ignored.
	if in.ProviderID != "" || in.Name != "" || in.Status != "" {
		t.Errorf("create returned %+v from the stdout of a failed call", in)
	}
	var exit *external.ExitError
	if !errors.As(err, &exit) || exit.Code != 1 {
		t.Errorf("err = %v, want *ExitError 1", err)
	}
	if pe.Op != "CreateInstance" || pe.Instance != "m-1" ||
		!strings.Contains(pe.Fault, "ignored-on-failure") || !strings.Contains(pe.Fault, "fake failure of CreateInstance") {
		t.Errorf("error %+v: want op, instance, and stdout+stderr as the fault", pe)
	}
	if _, err := f.provider.GetInstance(ctx, "x"); err == nil || errors.Is(err, providers.ErrNotFound) {
		t.Errorf("get exiting 2 = %v, want a plain failure", err)
	}
	if err := f.provider.DeleteInstance(ctx, "x"); err == nil {
		t.Error("delete exiting 3 succeeded")
	}
}

func TestFaultTextIsBounded(t *testing.T) {
	f := newFixture(t, externaltest.Config{Fail: map[string]int{"GetInstance": 1}, FailStderrBytes: 1 << 20}, nil)
	_, err := f.provider.GetInstance(context.Background(), "x")
	fault := providers.Fault(err)
	if len(fault) > 16<<10 || !strings.HasSuffix(fault, "xxx") {
		t.Fatalf("fault of %d bytes (ends %q); want at most 16 KiB keeping the end", len(fault), fault[max(0, len(fault)-10):])
	}
}

func TestInvalidOutputIsAProviderError(t *testing.T) {
	cases := []struct {
		name string
		cfg  externaltest.Config
		want string
	}{
		{"bad JSON", externaltest.Config{BadJSON: []string{"CreateInstance", "GetInstance", "ListInstances"}}, "invalid output"},
		{"invalid status", externaltest.Config{Status: "booting"}, `status "booting" is not one of`},
		{"plain-text provider_fault", externaltest.Config{PlainTextFault: "disk full on host 7"}, "illegal base64"},
		{"missing provider_id", externaltest.Config{OmitProviderID: true}, "provider_id is empty"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			f := newFixture(t, externaltest.Config{}, nil)
			if _, err := f.provider.CreateInstance(ctx, createRequest("m-1")); err != nil {
				t.Fatal(err)
			}
			f.setConfig(tc.cfg)
			check := func(op string, err error) {
				t.Helper()
				var pe *providers.Error
				if !errors.Is(err, external.ErrInvalidOutput) || !errors.As(err, &pe) || !strings.Contains(pe.Fault, tc.want) {
					t.Errorf("%s: err = %v; want ErrInvalidOutput with a fault naming %q", op, err, tc.want)
				}
			}
			_, err := f.provider.CreateInstance(ctx, createRequest("m-2"))
			check("create", err)
			_, err = f.provider.GetInstance(ctx, "fk-1")
			check("get", err)
			_, err = f.provider.ListInstances(ctx, testPoolID)
			check("list", err)
		})
	}
}

func TestInvalidCreateAnswerStillNamesTheMachine(t *testing.T) {
	f := newFixture(t, externaltest.Config{Status: "booting"}, nil)
	in, err := f.provider.CreateInstance(context.Background(), createRequest("m-1"))
	if !errors.Is(err, external.ErrInvalidOutput) || in.ProviderID != "fk-1" {
		t.Fatalf("create = %+v, %v; want the machine's id with the error, so it can be deleted", in, err)
	}
}

func TestStatusErrorCarriesTheDecodedFault(t *testing.T) {
	f := newFixture(t, externaltest.Config{Status: "error", Fault: "quota exceeded in eu-west-1"}, nil)
	in, err := f.provider.CreateInstance(context.Background(), createRequest("m-1"))
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	if in.Status != providers.StatusError || in.Fault != "quota exceeded in eu-west-1" {
		t.Fatalf("created %+v; want status error with the decoded provider_fault", in)
	}
}

func TestListOutput(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, externaltest.Config{ListOutput: "null"}, nil)
	list, err := f.provider.ListInstances(ctx, testPoolID)
	if err != nil || len(list) != 0 {
		t.Fatalf("list printing null = %+v, %v; want no instances", list, err)
	}
	f.setConfig(externaltest.Config{ListOutput: "empty"})
	if _, err := f.provider.ListInstances(ctx, testPoolID); !errors.Is(err, external.ErrInvalidOutput) {
		t.Fatalf("list printing nothing = %v; want ErrInvalidOutput", err)
	}
}

func TestStdinOnlyForCreate(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, externaltest.Config{}, map[string]any{
		"os_type": "linux", "arch": "arm64", "flavor": "m7g.large", "image": "ami-123",
		"extra_specs": map[string]any{"subnet_id": "subnet-1"},
	})
	in, err := f.provider.CreateInstance(ctx, createRequest("m-1"))
	if err != nil {
		t.Fatal(err)
	}
	_, _ = f.provider.GetInstance(ctx, in.ProviderID)
	_, _ = f.provider.ListInstances(ctx, testPoolID)
	_ = f.provider.StopInstance(ctx, in.ProviderID)
	_ = f.provider.StartInstance(ctx, in.ProviderID)
	_ = f.provider.DeleteInstance(ctx, in.ProviderID)
	_ = f.provider.RemoveAllInstances(ctx)
	_, _ = f.provider.GetVersion(ctx)

	recs := f.records()
	if len(recs) != 8 {
		t.Fatalf("%d calls recorded, want 8", len(recs))
	}
	for _, r := range recs[1:] {
		if r.Stdin != "" {
			t.Errorf("%s got stdin %q; only CreateInstance may", r.Command, r.Stdin)
		}
	}
	var sent map[string]any
	if err := json.Unmarshal([]byte(recs[0].Stdin), &sent); err != nil {
		t.Fatalf("CreateInstance stdin is not one JSON object: %v", err)
	}
	want := map[string]any{
		"name": "m-1", "repo_url": "https://github.com/octo-org",
		"callback-url": "https://runfleet.example/callbacks", "metadata-url": "https://runfleet.example/metadata",
		"instance-token": "tok-123", "github-runner-group": "ci", "pool_id": testPoolID,
		"jit_config_enabled": true, "os_type": "linux", "arch": "arm64", "flavor": "m7g.large", "image": "ami-123",
		"extra_specs": map[string]any{"subnet_id": "subnet-1"},
		"labels":      []any{"self-hosted", "linux", "arm64"},
		"tools":       []any{},
	}
	for k, v := range want {
		if got, _ := json.Marshal(sent[k]); string(got) != mustJSON(t, v) {
			t.Errorf("bootstrap %s = %s, want %s", k, got, mustJSON(t, v))
		}
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestCleanEnvironment checks the exact environment of every command.
func TestCleanEnvironment(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, externaltest.Config{}, map[string]any{"environment_passthrough": []any{"AWS_"}})
	in, err := f.provider.CreateInstance(ctx, createRequest("m-1"))
	if err != nil {
		t.Fatal(err)
	}
	_, _ = f.provider.GetInstance(ctx, in.ProviderID)
	_, _ = f.provider.ListInstances(ctx, testPoolID)
	_ = f.provider.StopInstance(ctx, in.ProviderID)
	_ = f.provider.StartInstance(ctx, in.ProviderID)
	_ = f.provider.DeleteInstance(ctx, in.Name)
	_ = f.provider.RemoveAllInstances(ctx)
	_, _ = f.provider.GetVersion(ctx)

	host := map[string]string{
		"AWS_REGION": "eu-west-1", "AWS_SECRET_ACCESS_KEY": "role-secret",
		"http_proxy": "http://proxy.internal:3128", "NO_PROXY": "localhost,169.254.169.254",
	}
	base := func(command string) map[string]string {
		m := maps.Clone(host)
		m["GARM_COMMAND"] = command
		m["GARM_CONTROLLER_ID"] = testController
		m["GARM_PROVIDER_CONFIG_FILE"] = f.cfgPath
		m["GARM_INTERFACE_VERSION"] = "v0.1.0"
		return m
	}
	with := func(m map[string]string, kv ...string) map[string]string {
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	want := []map[string]string{
		with(base("CreateInstance"), "GARM_POOL_ID", testPoolID),
		with(base("GetInstance"), "GARM_INSTANCE_ID", "fk-1"),
		with(base("ListInstances"), "GARM_POOL_ID", testPoolID),
		with(base("StopInstance"), "GARM_INSTANCE_ID", "fk-1"),
		with(base("StartInstance"), "GARM_INSTANCE_ID", "fk-1"),
		// No provider id known: the name goes in GARM_INSTANCE_ID.
		with(base("DeleteInstance"), "GARM_INSTANCE_ID", "m-1"),
		base("RemoveAllInstances"),
		base("GetVersion"),
	}
	recs := f.records()
	if len(recs) != len(want) {
		t.Fatalf("%d calls, want %d", len(recs), len(want))
	}
	for i, r := range recs {
		if !maps.Equal(r.Env, want[i]) {
			t.Errorf("%s environment:\n got %v\nwant %v", r.Command, r.Env, want[i])
		}
	}
}

func TestInterfaceV011AddsPoolAndExtraSpecsToEveryCommand(t *testing.T) {
	ctx := context.Background()
	specs := map[string]any{"subnet_id": "subnet-1", "volume_size": 50}
	f := newFixture(t, externaltest.Config{}, map[string]any{"interface_version": "v0.1.1", "extra_specs": specs})
	in, err := f.provider.CreateInstance(ctx, createRequest("m-1"))
	if err != nil {
		t.Fatal(err)
	}
	_, _ = f.provider.GetInstance(ctx, in.ProviderID)
	_, _ = f.provider.ListInstances(ctx, testPoolID)
	_ = f.provider.StopInstance(ctx, in.Name)
	_ = f.provider.StartInstance(ctx, in.Name)
	_ = f.provider.DeleteInstance(ctx, in.ProviderID)
	_ = f.provider.RemoveAllInstances(ctx)
	_, _ = f.provider.GetVersion(ctx)

	// The commands that carry no pool send the one the provider was built
	// for: its provider-side id, never the pool's name.
	for _, r := range f.records() {
		if r.Env["GARM_INTERFACE_VERSION"] != "v0.1.1" || r.Env["GARM_POOL_ID"] != testPoolID {
			t.Errorf("%s: version %q pool %q", r.Command, r.Env["GARM_INTERFACE_VERSION"], r.Env["GARM_POOL_ID"])
		}
		decoded, err := base64.StdEncoding.DecodeString(r.Env["GARM_POOL_EXTRASPECS"])
		if err != nil || string(decoded) != mustJSON(t, specs) {
			t.Errorf("%s: GARM_POOL_EXTRASPECS %q decodes to %q (%v), want %s", r.Command, r.Env["GARM_POOL_EXTRASPECS"], decoded, err, mustJSON(t, specs))
		}
	}

	// Without extra specs the variable is the encoding of `null`.
	g := newFixture(t, externaltest.Config{}, map[string]any{"interface_version": "0.1.1"})
	_ = g.provider.DeleteInstance(ctx, "m-9")
	if got := g.lastRecord().Env["GARM_POOL_EXTRASPECS"]; got != base64.StdEncoding.EncodeToString([]byte("null")) {
		t.Errorf("GARM_POOL_EXTRASPECS without extra specs = %q, want base64 of null", got)
	}
}

// TestProviderIgnoringDeleteByNameIsCaughtByListing: such a provider says a
// delete by name worked while the machine keeps running. Nothing in the call
// shows it; only a later ListInstances (the reconciler's) reveals the
// machine.
func TestProviderIgnoringDeleteByNameIsCaughtByListing(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, externaltest.Config{IgnoreDeleteByName: true}, nil)
	in, err := f.provider.CreateInstance(ctx, createRequest("m-1"))
	if err != nil {
		t.Fatal(err)
	}
	if err := f.provider.DeleteInstance(ctx, in.Name); err != nil {
		t.Fatalf("delete by name = %v (the provider claims success)", err)
	}
	if m := f.machines(); len(m) != 1 || m[0].Instance.Name != "m-1" {
		t.Fatalf("state %+v; want the machine still running", m)
	}
	list, err := f.provider.ListInstances(ctx, testPoolID)
	if err != nil || len(list) != 1 || list[0].Name != "m-1" {
		t.Fatalf("list = %+v, %v; want the leaked machine", list, err)
	}
	if err := f.provider.DeleteInstance(ctx, list[0].ProviderID); err != nil || len(f.machines()) != 0 {
		t.Fatalf("delete by the listed provider id = %v; machines %+v", err, f.machines())
	}
}

func TestEmptyInstanceIsRefusedWithoutRunningTheProvider(t *testing.T) {
	f := newFixture(t, externaltest.Config{}, nil)
	if err := f.provider.DeleteInstance(context.Background(), ""); err == nil {
		t.Fatal("delete of \"\" succeeded")
	}
	if _, err := f.provider.CreateInstance(context.Background(), providers.CreateRequest{Pool: testPool, PoolID: testPoolID}); err == nil {
		t.Fatal("create without a name succeeded")
	}
	if recs, _ := externaltest.ReadRecords(f.cfg.RecordFile); len(recs) != 0 {
		t.Fatalf("the provider ran %d times", len(recs))
	}
}
