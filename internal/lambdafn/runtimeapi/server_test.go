package runtimeapi_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-lambda-go/lambdacontext"

	"github.com/runfleet/runfleet/internal/lambdafn/runtimeapi"
)

// roleEnv makes this test binary, started by a test, a Lambda function
// run by aws-lambda-go instead of the tests.
const roleEnv = "RUNTIMEAPI_TEST_FUNCTION"

func TestMain(m *testing.M) {
	if os.Getenv(roleEnv) == "echo" {
		lambda.Start(echo)
		return
	}
	os.Exit(m.Run())
}

// RefusedError is what echo returns for {"fail": true}; aws-lambda-go
// reports its type name as errorType.
type RefusedError struct{ Reason string }

func (e *RefusedError) Error() string { return "refused: " + e.Reason }

type echoEvent struct {
	Say  string `json:"say"`
	Fail bool   `json:"fail"`
	Exit bool   `json:"exit"`
}

type echoReply struct {
	Said        string `json:"said"`
	RequestID   string `json:"request_id"`
	FunctionARN string `json:"function_arn"`
	HasDeadline bool   `json:"has_deadline"`
}

func echo(ctx context.Context, ev echoEvent) (echoReply, error) {
	if ev.Exit {
		os.Exit(3)
	}
	if ev.Fail {
		return echoReply{}, &RefusedError{Reason: ev.Say}
	}
	lc, _ := lambdacontext.FromContext(ctx)
	_, hasDeadline := ctx.Deadline()
	return echoReply{Said: ev.Say, RequestID: lc.AwsRequestID, FunctionARN: lc.InvokedFunctionArn, HasDeadline: hasDeadline}, nil
}

func startEcho(t *testing.T) (*runtimeapi.Server, *runtimeapi.Process) {
	t.Helper()
	srv := runtimeapi.NewServer(t, runtimeapi.Options{FunctionName: "echo"})
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return srv, srv.Start(t, runtimeapi.Bootstrap{Path: self, Env: map[string]string{roleEnv: "echo"}})
}

func invoke(t *testing.T, srv *runtimeapi.Server, ev echoEvent) ([]byte, *runtimeapi.FunctionError, error) {
	t.Helper()
	payload, err := json.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	return srv.Invoke(ctx, payload)
}

// aws-lambda-go's runtime client gets its events, context and deadline
// from the server, and the server gets back responses and typed function
// errors, one invocation after the other on one process.
func TestAWSLambdaGoRunsAgainstTheServer(t *testing.T) {
	srv, _ := startEcho(t)
	seen := map[string]bool{}
	for _, say := range []string{"one", "two"} {
		resp, fnErr, err := invoke(t, srv, echoEvent{Say: say})
		if err != nil || fnErr != nil {
			t.Fatalf("invoke %q: %v, %+v", say, err, fnErr)
		}
		var reply echoReply
		if err := json.Unmarshal(resp, &reply); err != nil {
			t.Fatal(err)
		}
		if reply.Said != say || reply.RequestID == "" || seen[reply.RequestID] || reply.FunctionARN != srv.FunctionARN() || !reply.HasDeadline {
			t.Fatalf("reply %+v", reply)
		}
		seen[reply.RequestID] = true
	}
	_, fnErr, err := invoke(t, srv, echoEvent{Say: "no", Fail: true})
	if err != nil || fnErr == nil || fnErr.Type != "RefusedError" || fnErr.Message != "refused: no" {
		t.Fatalf("failing invoke: %v, %+v; want a RefusedError", err, fnErr)
	}
	if _, ok := srv.InitError(); ok {
		t.Fatal("an init error was recorded for a runtime that started")
	}
}

// An invocation whose runtime dies is an error, not a hang, and so is
// every later one.
func TestInvocationFailsWhenTheBootstrapExits(t *testing.T) {
	srv, proc := startEcho(t)
	if _, _, err := invoke(t, srv, echoEvent{Exit: true}); err == nil || !strings.Contains(err.Error(), "exited") {
		t.Fatalf("invoke that kills the runtime: %v, want an error saying it exited", err)
	}
	var exitErr interface{ ExitCode() int }
	if !errors.As(proc.ExitErr(), &exitErr) || exitErr.ExitCode() != 3 {
		t.Fatalf("exit: %v", proc.ExitErr())
	}
	if _, _, err := invoke(t, srv, echoEvent{Say: "anyone?"}); err == nil {
		t.Fatal("invoke after the runtime exited succeeded")
	}
}

// /init/error is recorded with its body and header; answers for unknown
// invocations are refused as Lambda refuses them.
func TestInitErrorAndUnknownInvocations(t *testing.T) {
	srv := runtimeapi.NewServer(t, runtimeapi.Options{})
	base := "http://" + srv.Addr() + "/2018-06-01/runtime/"
	req, err := http.NewRequest(http.MethodPost, base+"init/error", strings.NewReader(`{"errorMessage": "no table", "errorType": "EnvError"}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set(runtimeapi.HeaderFunctionErrorType, "Runfleet.EnvError")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	initErr, ok := srv.InitError()
	if resp.StatusCode != http.StatusAccepted || !ok || initErr.Type != "EnvError" || initErr.Message != "no table" || initErr.HeaderType != "Runfleet.EnvError" {
		t.Fatalf("init error: status %d, recorded %+v", resp.StatusCode, initErr)
	}
	for _, path := range []string{"invocation/nobody/response", "invocation/nobody/error"} {
		resp, err := http.Post(base+path, "application/json", strings.NewReader(`{"errorMessage": "x", "errorType": "y"}`))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest {
			t.Errorf("POST %s = %d, want 400", path, resp.StatusCode)
		}
	}
}
