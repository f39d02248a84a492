package lambdafn

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"time"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/runfleet/runfleet/internal/telemetry"
)

// The init error a function reports when its environment is wrong: the
// errorType of the /init/error body (what `aws lambda invoke` and the
// function's log show) and the Lambda-Runtime-Function-Error-Type header.
const (
	InitErrorType       = "EnvError"
	InitErrorHeaderType = "Runfleet.EnvError"
)

// envRuntimeAPI is where Lambda tells a runtime its Runtime API is.
const envRuntimeAPI = "AWS_LAMBDA_RUNTIME_API"

// Start is each function's main: it checks role's environment and hands
// handler to lambda.Start. An environment the function cannot run with
// (EnvError) is the execution environment's init error, reported to the
// Runtime API's /init/error before the process exits: Lambda then fails
// the invocation with InitErrorType and the full reason instead of a bare
// Runtime.ExitError, and nothing is tried that could half work.
//
// Everything else (config, secrets, GitHub, providers) is built on the
// first invocation and retried on the next (Lazy): those are fixed without
// a redeploy, so they must not make the environment unusable.
func Start(role Role, handler any) {
	if _, err := ReadEnv(role, os.LookupEnv); err != nil {
		log := telemetry.NewLogger(os.Stdout, slog.LevelInfo).With("function", string(role))
		log.Error("function cannot start: its environment is incomplete; fix the template and redeploy", "error", err)
		if reportErr := reportInitError(os.Getenv(envRuntimeAPI), err); reportErr != nil {
			log.Error("init error could not be reported to the Lambda Runtime API", "error", reportErr)
		}
		os.Exit(1)
	}
	lambda.Start(handler)
}

// reportInitError posts err to the Runtime API's /init/error as Lambda
// documents it: a JSON body with errorMessage and errorType, and the type
// again in Lambda-Runtime-Function-Error-Type.
func reportInitError(api string, err error) error {
	if api == "" {
		return fmt.Errorf("%s is not set", envRuntimeAPI)
	}
	body, mErr := json.Marshal(map[string]string{"errorMessage": err.Error(), "errorType": InitErrorType})
	if mErr != nil {
		return mErr
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, rErr := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+api+"/2018-06-01/runtime/init/error", bytes.NewReader(body))
	if rErr != nil {
		return rErr
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Lambda-Runtime-Function-Error-Type", InitErrorHeaderType)
	resp, dErr := http.DefaultClient.Do(req)
	if dErr != nil {
		return dErr
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		return fmt.Errorf("POST /init/error: status %d", resp.StatusCode)
	}
	return nil
}

// StartError is a function that could not build what it runs with (config,
// secrets, store, GitHub client, providers) on an invocation: the reason is
// Err. The reconciler and the operator's delete return it as their
// invocation's error, so Lambda reports errorType "StartError"; the next
// invocation tries again.
type StartError struct {
	Role Role
	Err  error
}

func (e *StartError) Error() string {
	return fmt.Sprintf("%s function could not start: %v", e.Role, e.Err)
}

func (e *StartError) Unwrap() error { return e.Err }
