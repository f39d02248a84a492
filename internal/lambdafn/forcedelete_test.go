package lambdafn_test

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/runfleet/runfleet/internal/engine"
	"github.com/runfleet/runfleet/internal/github"
	"github.com/runfleet/runfleet/internal/runner"
	"github.com/runfleet/runfleet/internal/store"
	"github.com/runfleet/runfleet/providers/simulated"
)

// lambdaErrorType is the errorType Lambda reports for a returned error: its
// Go type name (aws-lambda-go's lambdaErrorResponse).
func lambdaErrorType(err error) string {
	t := reflect.TypeOf(err)
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t.Name()
}

func TestForceDeleteRefusesBadInputAndUnknownInstances(t *testing.T) {
	s := newStack(t, stackOptions{})
	fn := s.forceDelete()
	for _, tc := range []struct {
		payload  string
		wantType string
		wantText string
	}{
		{`{}`, "InvalidInputError", `"name" is missing`},
		{`{"name": "  "}`, "InvalidInputError", `"name" is missing`},
		{`{"name": "runfleet-x-1-1", "froce": true}`, "InvalidInputError", `unknown field "froce"`},
		{`{"name": 7}`, "InvalidInputError", "invalid input"},
		{`{"name": "runfleet-x-1-1"} {}`, "InvalidInputError", "trailing data"},
		{`{"name": "runfleet-linux-x64-1-1", "force": true}`, "InstanceNotFoundError", `instance "runfleet-linux-x64-1-1" not found`},
	} {
		ctx, _ := s.invocation()
		res, err := fn(ctx, json.RawMessage(tc.payload))
		if err == nil {
			t.Errorf("%s: succeeded with %+v, want %s", tc.payload, res, tc.wantType)
			continue
		}
		if got := lambdaErrorType(err); got != tc.wantType || !strings.Contains(err.Error(), tc.wantText) {
			t.Errorf("%s: errorType %s, message %q; want %s containing %q", tc.payload, got, err, tc.wantType, tc.wantText)
		}
	}
	if _, err := fn(t.Context(), json.RawMessage(`{"name": "runfleet-linux-x64-1-1"}`)); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("unknown instance: %v does not match store.ErrNotFound", err)
	}
}

// An ordinary operator delete of a runner GitHub reports busy is refused at
// once and changes nothing; with force it goes ahead.
func TestForceDeleteOfABusyRunner(t *testing.T) {
	s := newStack(t, stackOptions{})
	intake, worker, fd := s.webhook(), s.worker(), s.forceDelete()
	name := s.runJob(t, intake, worker, 7000000501)
	if !s.gh.SetBusy(name, true) {
		t.Fatalf("runner %s is not registered in the simulated GitHub", name)
	}

	ctx, _ := s.invocation()
	_, err := fd(ctx, json.RawMessage(`{"name": "`+name+`"}`))
	if lambdaErrorType(err) != "RunnerBusyError" || !errors.Is(err, github.ErrRunnerBusy) {
		t.Fatalf("ordinary delete of a busy runner: %v (%s), want RunnerBusyError", err, lambdaErrorType(err))
	}
	if _, ok := errorAs[*engine.BusyError](err); !ok {
		t.Fatalf("%v does not carry the engine's BusyError", err)
	}
	if got := s.instance(t, name).Status; got != runner.StatusRunning {
		t.Fatalf("after a refused delete: %s, want running", got)
	}

	ctx, _ = s.invocation()
	res, err := fd(ctx, json.RawMessage(`{"name": "`+name+`", "force": true}`))
	if err != nil || !res.OK || res.Instance.Status != runner.StatusPendingForceDelete {
		t.Fatalf("forced delete of a busy runner: %+v, %v; want ok, pending_force_delete", res, err)
	}
	s.drain(t, worker, 10*time.Second, name+" deleted", s.hasStatus(name, runner.StatusDeleted))
}

// P8: a forced delete completes even though the provider fails every call,
// and the fault is recorded on the instance.
func TestForcedDeleteCompletesDespiteAFailingProvider(t *testing.T) {
	s := newStack(t, stackOptions{})
	intake, worker, fd := s.webhook(), s.worker(), s.forceDelete()
	name := s.runJob(t, intake, worker, 7000000601)
	s.simulated(linuxPool).SetFaults(simulated.Faults{AlwaysFailDelete: true})

	ctx, _ := s.invocation()
	res, err := fd(ctx, json.RawMessage(`{"name": "`+name+`", "force": true}`))
	if err != nil {
		t.Fatalf("forced delete: %v", err)
	}
	out, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	var shown struct {
		OK       bool `json:"ok"`
		Instance struct {
			Name   string `json:"name"`
			Status string `json:"status"`
		} `json:"instance"`
	}
	mustUnmarshal(t, out, &shown)
	if !shown.OK || shown.Instance.Name != name || shown.Instance.Status != string(runner.StatusPendingForceDelete) {
		t.Fatalf("output %s, want ok with the instance pending_force_delete", out)
	}

	s.drain(t, worker, 10*time.Second, name+" deleted", s.hasStatus(name, runner.StatusDeleted))
	inst := s.instance(t, name)
	if inst.ProviderFault == "" {
		t.Fatalf("deleted despite provider failures, but no fault recorded: %+v", inst)
	}
	if calls := s.simulated(linuxPool).DeleteCalls(name); calls != 1 {
		t.Fatalf("provider delete called %d times, want 1 (a forced delete does not retry)", calls)
	}
}
