package lambdafn_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/runfleet/runfleet/internal/engine"
	"github.com/runfleet/runfleet/internal/runner"
)

// On AWS, runfleet why is the operator function's {"why": JOB}: the answer
// first, from the same records; it deletes nothing, and is refused beside
// a delete.
func TestOperatorFunctionAnswersWhy(t *testing.T) {
	s := newStack(t, stackOptions{})
	intake, worker, fd := s.webhook(), s.worker(), s.forceDelete()
	name := s.runJob(t, intake, worker, 7000000601)

	ctx, _ := s.invocation()
	res, err := fd(ctx, json.RawMessage(`{"why": "https://github.com/octo-org/hello/actions/runs/1/job/7000000601"}`))
	if err != nil || !res.OK || res.Why == nil || res.Instance != nil {
		t.Fatalf("why: %+v, %v", res, err)
	}
	if res.Why.Answer.Reason != string(runner.WaitBooting) || !strings.HasPrefix(res.Message, "Job 7000000601: runner "+name+" booting since") {
		t.Errorf("why answered %q (%s)", res.Message, res.Why.Answer.Reason)
	}
	if got := s.instance(t, name).Status; got != "running" {
		t.Errorf("why changed the instance: %s", got)
	}

	ctx, _ = s.invocation()
	res, err = fd(ctx, json.RawMessage(`{"why": "7000000999"}`))
	if err != nil || res.Why.Answer.Reason != engine.WhyUnknown || !strings.Contains(res.Message, "no record of job 7000000999") {
		t.Errorf("why of an unknown job: %+v, %v", res, err)
	}
	for _, payload := range []string{`{"why": "nope"}`, `{"why": "1", "name": "` + name + `"}`} {
		ctx, _ = s.invocation()
		if _, err := fd(ctx, json.RawMessage(payload)); lambdaErrorType(err) != "InvalidInputError" {
			t.Errorf("%s: %v, want InvalidInputError", payload, err)
		}
	}
}
