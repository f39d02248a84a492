package lambdafn_test

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	ssmtypes "github.com/aws/aws-sdk-go-v2/service/ssm/types"

	"github.com/runfleet/runfleet/internal/lambdafn"
	"github.com/runfleet/runfleet/internal/lambdafn/work"
	"github.com/runfleet/runfleet/internal/runner"
	"github.com/runfleet/runfleet/internal/testenv"
)

func TestReadEnvNamesEveryProblem(t *testing.T) {
	lookup := func(env map[string]string) func(string) (string, bool) {
		return func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	}
	_, err := lambdafn.ReadEnv(lambdafn.RoleWebhook, lookup(map[string]string{lambdafn.EnvLogLevel: "loud"}))
	for _, want := range []string{"RUNFLEET_TABLE", "RUNFLEET_QUEUE_URL", "RUNFLEET_CONFIG_PARAMETER", "RUNFLEET_WEBHOOK_SECRET_ARN", "LOG_LEVEL"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v does not name %s", err, want)
		}
	}
	complete := map[string]string{lambdafn.EnvTable: "t", lambdafn.EnvQueueURL: "q", lambdafn.EnvConfigParameter: "/p", lambdafn.EnvWorkerTimeout: "300s"}
	env, err := lambdafn.ReadEnv(lambdafn.RoleWorker, lookup(complete))
	if err != nil || env.Table != "t" || env.QueueURL != "q" || env.ConfigParameter != "/p" || env.WorkerTimeout != 300*time.Second {
		t.Errorf("worker without secret ARNs: %+v, %v; want it accepted (the GitHub secret is optional while simulated)", env, err)
	}
	if _, err := lambdafn.ReadEnv(lambdafn.Role("cron"), lookup(complete)); err == nil {
		t.Error("unknown role accepted")
	}
}

// The reconciler recovers an instance left in creating once no worker can
// still be working on it, so it must know the worker's timeout; the
// functions that never recover one do not ask for it.
func TestWorkerTimeoutIsRequiredWhereInstancesAreRecovered(t *testing.T) {
	base := map[string]string{lambdafn.EnvTable: "t", lambdafn.EnvQueueURL: "q", lambdafn.EnvConfigParameter: "/p", lambdafn.EnvWebhookSecretARN: "arn"}
	lookup := func(extra map[string]string) func(string) (string, bool) {
		return func(k string) (string, bool) {
			if v, ok := extra[k]; ok {
				return v, true
			}
			v, ok := base[k]
			return v, ok
		}
	}
	for _, role := range []lambdafn.Role{lambdafn.RoleWorker, lambdafn.RoleReconciler} {
		for _, value := range []string{"", "300", "-5s", "soon"} {
			_, err := lambdafn.ReadEnv(role, lookup(map[string]string{lambdafn.EnvWorkerTimeout: value}))
			if err == nil || !strings.Contains(err.Error(), lambdafn.EnvWorkerTimeout) {
				t.Errorf("%s with %s=%q: %v, want an error naming it", role, lambdafn.EnvWorkerTimeout, value, err)
			}
		}
	}
	for _, role := range []lambdafn.Role{lambdafn.RoleWebhook, lambdafn.RoleForceDelete} {
		if env, err := lambdafn.ReadEnv(role, lookup(nil)); err != nil || env.WorkerTimeout != 0 {
			t.Errorf("%s without %s: %+v, %v; want it accepted", role, lambdafn.EnvWorkerTimeout, env, err)
		}
	}
}

// Each function fetches only the secrets it uses: the worker runs from the
// same config without being granted the webhook secret, and holds no copy.
// The webhook function builds no provider and no GitHub client.
func TestSecretsComeFromSecretsManagerPerFunction(t *testing.T) {
	s := newStack(t, stackOptions{})
	ctx := context.Background()

	opts, err := s.options(lambdafn.RoleWebhook)
	if err != nil {
		t.Fatal(err)
	}
	intake, err := lambdafn.BuildWebhook(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	if string(intake.Config.Webhook.Secret) != testSecret {
		t.Fatalf("webhook function's secret = %q, want the one in Secrets Manager", intake.Config.Webhook.Secret)
	}
	if intake.Config.GitHub.Token != "" || (intake.Config.GitHub.App != nil && intake.Config.GitHub.App.PrivateKey != nil) {
		t.Fatal("webhook function holds a GitHub credential")
	}

	t.Setenv(lambdafn.EnvWebhookSecretARN, "")
	wopts, err := s.workOptions(lambdafn.RoleWorker)
	if err != nil {
		t.Fatal(err)
	}
	wopts.Providers, wopts.GitHub = nil, nil // build them from the config
	app, err := work.Build(ctx, lambdafn.RoleWorker, wopts)
	if err != nil {
		t.Fatalf("worker without the webhook secret: %v", err)
	}
	if app.Config.Webhook.Secret != nil {
		t.Fatalf("worker holds a webhook secret %q, want none", app.Config.Webhook.Secret)
	}
	if app.Providers[linuxPool] == nil {
		t.Fatal("no provider built for the pool")
	}
	if app.GitHub == nil || len(s.logs.Lines(t, map[string]any{"level": "WARN", "github_simulated": true})) == 0 {
		t.Fatal("simulated GitHub built without a loud warning")
	}
}

// A build failure is reported on the invocation it happens in and retried
// on the next, so fixing the parameter in SSM needs no redeploy.
func TestFailedStartIsReportedAndRetried(t *testing.T) {
	s := newStack(t, stackOptions{})
	missing := "/" + testenv.UniqueName(t, "not-yet") + "/config"
	t.Setenv(lambdafn.EnvConfigParameter, missing)
	reconciler, intake, worker := s.reconciler(), s.webhook(), s.worker()

	var tick events.EventBridgeEvent
	mustUnmarshal(t, readTestdata(t, "scheduled-event.json"), &tick)
	ctx, id := s.invocation()
	if _, err := reconciler(ctx, tick); err == nil || !strings.Contains(err.Error(), missing) {
		t.Fatalf("reconciler with a missing config parameter: %v, want an error naming %s", err, missing)
	}
	if lines := s.logs.Lines(t, map[string]any{"aws_request_id": id, "level": "ERROR", "function": "reconciler"}); len(lines) != 1 ||
		!strings.Contains(lines[0]["error"].(string), missing) {
		t.Fatalf("failed start logged as %v, want one error line with the request id and the reason", lines)
	}
	status, reply := s.deliver(t, intake, functionURLEvent(t, jobPayload(t, runner.ActionQueued, 7000000901, "")))
	if status != http.StatusServiceUnavailable || strings.Contains(reply.Message, missing) {
		t.Fatalf("webhook that cannot start: %d %+v; want 503 that does not reveal the configuration", status, reply)
	}
	ctx, _ = s.invocation()
	if _, err := worker(ctx, events.SQSEvent{}); err != nil {
		t.Fatalf("worker that cannot start returned a function error: %v", err)
	}

	s.putParameter(t, missing, testConfig)
	ctx, _ = s.invocation()
	if _, err := reconciler(ctx, tick); err != nil {
		t.Fatalf("after the parameter was created: %v", err)
	}
	if status, _ := s.deliver(t, intake, functionURLEvent(t, jobPayload(t, runner.ActionQueued, 7000000902, ""))); status != http.StatusOK {
		t.Fatalf("webhook after the parameter was created: %d", status)
	}
	name := runner.InstanceName(linuxPool, 7000000902, 1)
	s.drain(t, worker, 10*time.Second, name+" running", s.hasStatus(name, runner.StatusRunning))
}

// What cannot run is refused at start with every reason at once: a pool
// whose provider cannot be built, an unusable GitHub App key.
func TestConfigThatCannotRunOnLambdaIsRefusedClearly(t *testing.T) {
	s := newStack(t, stackOptions{})
	key := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: []byte("not a real key")})
	t.Setenv(lambdafn.EnvGitHubSecretARN, s.putSecret(t, string(key)))
	param := "/" + testenv.UniqueName(t, "app") + "/config"
	s.putParameter(t, param, `controller_id: lambda-test
github:
  app: {id: 12345, private_key_env: RUNFLEET_GITHUB_PRIVATE_KEY}
webhook: {secret_env: RUNFLEET_WEBHOOK_SECRET}
pools:
  - name: metal
    owner: octo-org
    labels: [self-hosted, metal]
    max_runners: 2
    provider: {type: external}
`)
	t.Setenv(lambdafn.EnvConfigParameter, param)
	opts, err := s.workOptions(lambdafn.RoleWorker)
	if err != nil {
		t.Fatal(err)
	}
	opts.Providers, opts.GitHub = nil, nil
	_, err = work.Build(context.Background(), lambdafn.RoleWorker, opts)
	for _, want := range []string{param, `pools[0].provider`, `pool "metal"`, "github.app"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v\ndoes not contain %q", err, want)
		}
	}
}

func TestSecretProblemsAreExplained(t *testing.T) {
	s := newStack(t, stackOptions{})
	ctx := context.Background()

	// A secret name config.Parse asks for that Lambda does not answer.
	param := "/" + testenv.UniqueName(t, "api") + "/config"
	s.putParameter(t, param, testConfig+"server: {api_token_env: RUNFLEET_API_TOKEN}\n")
	t.Setenv(lambdafn.EnvConfigParameter, param)
	opts, _ := s.options(lambdafn.RoleWebhook)
	_, err := lambdafn.BuildWebhook(ctx, opts)
	for _, want := range []string{"RUNFLEET_API_TOKEN is not set", "answered from Secrets Manager", "embedded mode only"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("unknown secret name: %v\ndoes not contain %q", err, want)
		}
	}

	// A secret ARN that does not exist.
	t.Setenv(lambdafn.EnvConfigParameter, s.env.ConfigParameter)
	t.Setenv(lambdafn.EnvWebhookSecretARN, "arn:aws:secretsmanager:us-east-1:123456789012:secret:gone-AbCdEf")
	opts, _ = s.options(lambdafn.RoleWebhook)
	_, err = lambdafn.BuildWebhook(ctx, opts)
	if err == nil || !strings.Contains(err.Error(), "read RUNFLEET_WEBHOOK_SECRET from secret arn:aws:secretsmanager:us-east-1:123456789012:secret:gone-AbCdEf") {
		t.Errorf("missing secret: %v", err)
	}
}

// The forcedelete function's output is JSON an operator can read.
func TestForceDeleteResultJSON(t *testing.T) {
	out, err := json.Marshal(work.ForceDeleteResult{OK: true, Message: "delete scheduled"})
	if err != nil {
		t.Fatal(err)
	}
	if string(out) != `{"ok":true,"message":"delete scheduled","instance":null}` {
		t.Fatalf("%s", out)
	}
}

func (s *stack) putParameter(t testing.TB, name, value string) {
	t.Helper()
	if _, err := ssm.NewFromConfig(s.aws).PutParameter(context.Background(), &ssm.PutParameterInput{
		Name: aws.String(name), Type: ssmtypes.ParameterTypeSecureString, Value: aws.String(value), Overwrite: aws.Bool(true),
	}); err != nil {
		t.Fatal(err)
	}
}

func (s *stack) putSecret(t testing.TB, value string) string {
	t.Helper()
	out, err := secretsmanager.NewFromConfig(s.aws).CreateSecret(context.Background(), &secretsmanager.CreateSecretInput{
		Name: aws.String(testenv.UniqueName(t, "secret")), SecretString: aws.String(value),
	})
	if err != nil {
		t.Fatal(err)
	}
	return aws.ToString(out.ARN)
}
