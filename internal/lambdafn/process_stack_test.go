package lambdafn_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	sqsapi "github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	ssmtypes "github.com/aws/aws-sdk-go-v2/service/ssm/types"

	"github.com/runfleet/runfleet/internal/github/githubtest"
	"github.com/runfleet/runfleet/internal/lambdafn/runtimeapi"
	dynamostore "github.com/runfleet/runfleet/internal/store/dynamodb"
	"github.com/runfleet/runfleet/internal/testenv"
	"github.com/runfleet/runfleet/providers/external/externaltest"
)

// maxBootstrapBytes is the Makefile's LAMBDA_MAX_BYTES: the largest
// bootstrap a deploy accepts.
const maxBootstrapBytes = 20 << 20

// buildBootstraps builds functions/<pkg> for this machine the way the
// Makefile's go-lambda-build does for Lambda (static, lambda.norpc,
// trimmed, stripped), in one go command, and checks each against the size
// a deploy accepts. It returns each package's binary.
func buildBootstraps(t testing.TB, pkgs ...string) map[string]string {
	t.Helper()
	dir := t.TempDir()
	args := []string{"build", "-tags", "lambda.norpc", "-trimpath", "-ldflags", "-s -w", "-o", dir + string(filepath.Separator)}
	for _, pkg := range pkgs {
		args = append(args, "github.com/runfleet/runfleet/functions/"+pkg)
	}
	cmd := exec.Command("go", args...)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("go %v: %v\n%s", args, err, out.String())
	}
	bins := map[string]string{}
	for _, pkg := range pkgs {
		path := filepath.Join(dir, pkg)
		info, err := os.Stat(path)
		if err != nil {
			t.Fatalf("bootstrap of %s: %v", pkg, err)
		}
		if info.Size() > maxBootstrapBytes {
			t.Errorf("bootstrap of %s is %d bytes, more than the %d a deploy accepts", pkg, info.Size(), maxBootstrapBytes)
		}
		bins[pkg] = path
	}
	return bins
}

// localStack is a deployed stack's resources, made fresh for one test in
// DynamoDB Local and moto, and the clients the test uses to look at them.
type localStack struct {
	aws    aws.Config
	ddb    *dynamodb.Client
	sqs    *sqsapi.Client
	store  *dynamostore.Store
	deploy deployment
	// endpoints are the emulators' addresses, which the functions get as
	// AWS_ENDPOINT_URL* in place of AWS's.
	endpoints map[string]string
}

// processTestKeyID and processTestSecretKey are the static credentials the
// emulators accept (Lambda gives a function its role's).
const (
	processTestKeyID     = "testing"
	processTestSecretKey = "testing"
)

// newLocalStack makes the table, queue, config parameter and secrets a
// deploy makes, and records what template.yaml's references resolve to.
// githubSecret is the GitHub token (GitHubSecretArn's secret); config the
// runfleet YAML (ConfigParameter).
func newLocalStack(t testing.TB, config, githubToken string) *localStack {
	t.Helper()
	ctx := context.Background()
	endpoints := map[string]string{
		"AWS_ENDPOINT_URL":          testenv.MotoEndpoint(t),
		"AWS_ENDPOINT_URL_SQS":      testenv.SQSEndpoint(t),
		"AWS_ENDPOINT_URL_DYNAMODB": testenv.DynamoDBEndpoint(t),
	}
	cfg, err := awsconfig.LoadDefaultConfig(ctx,
		awsconfig.WithRegion(testenv.Region),
		awsconfig.WithCredentialsProvider(credentials.NewStaticCredentialsProvider(processTestKeyID, processTestSecretKey, "")),
		awsconfig.WithBaseEndpoint(endpoints["AWS_ENDPOINT_URL"]))
	if err != nil {
		t.Fatal(err)
	}
	ls := &localStack{aws: cfg, endpoints: endpoints}
	ls.ddb = dynamodb.NewFromConfig(cfg, disableChecksum, func(o *dynamodb.Options) {
		o.BaseEndpoint = aws.String(endpoints["AWS_ENDPOINT_URL_DYNAMODB"])
	})
	ls.sqs = sqsapi.NewFromConfig(cfg, func(o *sqsapi.Options) { o.BaseEndpoint = aws.String(endpoints["AWS_ENDPOINT_URL_SQS"]) })

	table := testenv.UniqueName(t, "runfleet")
	if err := dynamostore.CreateTable(ctx, ls.ddb, table); err != nil {
		t.Fatal(err)
	}
	ls.store = dynamostore.New(ls.ddb, table)
	q, err := ls.sqs.CreateQueue(ctx, &sqsapi.CreateQueueInput{
		QueueName: aws.String(testenv.UniqueName(t, "work")),
		// As template.yaml's WorkQueue: a record comes back early only if
		// the worker shortens its visibility.
		Attributes: map[string]string{"VisibilityTimeout": "1800"},
	})
	if err != nil {
		t.Fatal(err)
	}
	param := "/" + testenv.UniqueName(t, "runfleet") + "/config"
	if _, err := ssm.NewFromConfig(cfg).PutParameter(ctx, &ssm.PutParameterInput{
		Name: aws.String(param), Type: ssmtypes.ParameterTypeString, Value: aws.String(config),
	}); err != nil {
		t.Fatal(err)
	}
	secret := func(name, value string) string {
		out, err := secretsmanager.NewFromConfig(cfg).CreateSecret(ctx, &secretsmanager.CreateSecretInput{
			Name: aws.String(testenv.UniqueName(t, name)), SecretString: aws.String(value),
		})
		if err != nil {
			t.Fatal(err)
		}
		return aws.ToString(out.ARN)
	}
	ls.deploy = deployment{
		refs: map[string]string{
			"StateTable":       table,
			"WorkQueue":        aws.ToString(q.QueueUrl),
			"ConfigParameter":  param,
			"WebhookSecret":    secret("webhook-secret", testSecret),
			"InstanceTokenKey": secret("token-key", "process-test-instance-token-key-0123456789abcdef"),
			// Parameters given at deploy time; the others keep their
			// defaults.
			"GitHubSecretArn": secret("github-token", githubToken),
			"LogLevel":        "debug",
			// The config's controller_id, as the deployer repeats it
			// (every function refuses a mismatch).
			"ControllerId": "process-test",
		},
		getAtts: map[string]string{
			"MetadataFunctionUrl.FunctionUrl": metadataFunctionURL,
		},
		// The stack makes the config parameter and the webhook secret, as
		// the quick start deploys it.
		conditions: map[string]bool{"CreateConfigParameter": true, "CreateWebhookSecret": true, "CreateCacheBucket": false},
	}
	return ls
}

// lambdaEnv is what Lambda itself adds to a function's environment (the
// runtime's own variables and the role's credentials), with the emulators
// standing in for AWS's endpoints. AWS_LAMBDA_RUNTIME_API is added by
// runtimeapi.
func (ls *localStack) lambdaEnv(function string) map[string]string {
	env := map[string]string{
		"AWS_REGION":                      testenv.Region,
		"AWS_DEFAULT_REGION":              testenv.Region,
		"AWS_ACCESS_KEY_ID":               processTestKeyID,
		"AWS_SECRET_ACCESS_KEY":           processTestSecretKey,
		"AWS_LAMBDA_FUNCTION_NAME":        "runfleet-" + function,
		"AWS_LAMBDA_FUNCTION_VERSION":     "$LATEST",
		"AWS_LAMBDA_FUNCTION_MEMORY_SIZE": "256",
		"AWS_LAMBDA_LOG_GROUP_NAME":       "/aws/lambda/runfleet-" + function,
		"AWS_EXECUTION_ENV":               "AWS_Lambda_provided.al2023",
		"_HANDLER":                        "bootstrap",
		"TZ":                              ":UTC",
		// No instance metadata service here; the SDK must not wait for one.
		"AWS_EC2_METADATA_DISABLED": "true",
	}
	for name, value := range ls.endpoints {
		env[name] = value
	}
	return env
}

// function is one deployed function: an execution environment (a Runtime
// API server) with its bootstrap running.
type function struct {
	name string
	api  *runtimeapi.Server
	proc *runtimeapi.Process
}

// startFunction runs bin as template.yaml's function (a logical id) with
// exactly the environment the template gives it plus Lambda's own, in
// working directory dir ("" = a fresh one).
func (ls *localStack) startFunction(t testing.TB, logicalID, bin, dir string) *function {
	t.Helper()
	env := templateEnv(t, logicalID, ls.deploy)
	for name, value := range ls.lambdaEnv(logicalID) {
		if _, clash := env[name]; clash {
			t.Fatalf("template.yaml sets %s for %s, which Lambda sets itself", name, logicalID)
		}
		env[name] = value
	}
	return ls.startWithEnv(t, logicalID, bin, dir, env)
}

func (ls *localStack) startWithEnv(t testing.TB, logicalID, bin, dir string, env map[string]string) *function {
	t.Helper()
	api := runtimeapi.NewServer(t, runtimeapi.Options{FunctionName: "runfleet-" + logicalID, Timeout: time.Minute})
	proc := api.Start(t, runtimeapi.Bootstrap{Path: bin, Dir: dir, Env: env})
	return &function{name: logicalID, api: api, proc: proc}
}

// invoke sends event and returns the function's response, failing the
// test on a function error.
func (f *function) invoke(t testing.TB, event any, out any) {
	t.Helper()
	resp, fnErr := f.invokeRaw(t, event)
	if fnErr != nil {
		t.Fatalf("%s: function error %s (%s): %s", f.name, fnErr.Type, fnErr.HeaderType, fnErr.Message)
	}
	if out != nil {
		if err := json.Unmarshal(resp, out); err != nil {
			t.Fatalf("%s: response %q: %v", f.name, resp, err)
		}
	}
}

func (f *function) invokeRaw(t testing.TB, event any) ([]byte, *runtimeapi.FunctionError) {
	t.Helper()
	payload, err := json.Marshal(event)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	resp, fnErr, err := f.api.Invoke(ctx, payload)
	if err != nil {
		t.Fatalf("%s: %v\noutput:\n%s", f.name, err, f.proc.Output())
	}
	return resp, fnErr
}

// receive plays the event source mapping's poll: up to ten messages from
// the work queue, waiting at most wait.
func (ls *localStack) receive(t testing.TB, wait time.Duration) []sqstypes.Message {
	t.Helper()
	out, err := ls.sqs.ReceiveMessage(context.Background(), &sqsapi.ReceiveMessageInput{
		QueueUrl:                    aws.String(ls.deploy.refs["WorkQueue"]),
		MaxNumberOfMessages:         10,
		WaitTimeSeconds:             int32(wait / time.Second),
		MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameAll},
		MessageAttributeNames:       []string{"All"},
	})
	if err != nil {
		t.Fatalf("ReceiveMessage: %v", err)
	}
	return out.Messages
}

// work hands msgs to the worker as the event source mapping does and
// deletes the records it did not report as failed; it returns the
// worker's response.
func (ls *localStack) work(t testing.TB, worker *function, msgs []sqstypes.Message) events.SQSEventResponse {
	t.Helper()
	event := sqsEventOf(t, msgs)
	var resp events.SQSEventResponse
	worker.invoke(t, event, &resp)
	deleteHandled(t, ls.sqs, ls.deploy.refs["WorkQueue"], event, resp)
	return resp
}

// drainUntil runs the worker on the queue until done holds, for at most
// a minute.
func (ls *localStack) drainUntil(t testing.TB, worker *function, what string, done func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !done() {
		if time.Now().After(deadline) {
			t.Fatalf("after a minute: still waiting for %s\nworker output:\n%s", what, worker.proc.Output())
		}
		if msgs := ls.receive(t, time.Second); len(msgs) > 0 {
			if resp := ls.work(t, worker, msgs); len(resp.BatchItemFailures) > 0 {
				t.Logf("worker reported %d failed records while waiting for %s", len(resp.BatchItemFailures), what)
			}
		}
	}
}

// fakeGitHub is the fake GitHub REST server the functions reach with their
// real client, authenticated by a personal access token.
func fakeGitHub(t testing.TB, token string) *githubtest.Server {
	t.Helper()
	srv := githubtest.NewServer(t, githubtest.WithToken(token), githubtest.WithRateLimit(100_000))
	srv.AddOrg("octo-org")
	return srv
}

// layerDirs makes two working directories for functions: one whose opt/
// holds the GARM provider and its config file as a Lambda layer would put
// them under /opt, and one without. The config points the pool at
// /proc/self/cwd/opt/…, so each process resolves the path in its own
// working directory: only the functions started in the first see the
// provider, as only those template.yaml gives ProviderLayerArn see /opt.
func layerDirs(t testing.TB, providerBin string, cfg externaltest.Config) (withLayer, without string) {
	t.Helper()
	root := t.TempDir()
	withLayer, without = filepath.Join(root, "with-layer"), filepath.Join(root, "without-layer")
	providers := filepath.Join(withLayer, "opt", "garm", "providers")
	for _, dir := range []string{providers, without} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	bin, err := os.ReadFile(providerBin)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(providers, "garm-provider-fake"), bin, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := cfg.Write(filepath.Join(withLayer, "opt", "garm", "garm-provider-fake.json")); err != nil {
		t.Fatal(err)
	}
	return withLayer, without
}

// layerExecutable and layerConfigFile are the pool's provider settings:
// /opt/garm/… as docs/providers-external.md has them, seen through each
// process's working directory (layerDirs).
const (
	layerExecutable = "/proc/self/cwd/opt/garm/providers/garm-provider-fake"
	layerConfigFile = "/proc/self/cwd/opt/garm/garm-provider-fake.json"
)

// processConfig is the runfleet config in SSM: the fake GitHub through a
// token from Secrets Manager, and one pool on the layer's provider.
func processConfig(githubURL string) string {
	return fmt.Sprintf(`controller_id: process-test
github:
  base_url: %s
  token_env: RUNFLEET_GITHUB_TOKEN
webhook:
  secret_env: RUNFLEET_WEBHOOK_SECRET
  max_body_bytes: 65536
engine:
  delete_backoff_min: 1s
pools:
  - name: linux-x64
    owner: octo-org
    labels: [self-hosted, linux, x64]
    max_runners: 50
    provider:
      type: external
      settings:
        provider_executable: %s
        config_file: %s
`, githubURL, layerExecutable, layerConfigFile)
}

// sendRaw puts body on the work queue and returns its message id.
func sendRaw(t testing.TB, ls *localStack, body string) string {
	t.Helper()
	out, err := ls.sqs.SendMessage(context.Background(), &sqsapi.SendMessageInput{
		QueueUrl: aws.String(ls.deploy.refs["WorkQueue"]), MessageBody: aws.String(body),
	})
	if err != nil {
		t.Fatal(err)
	}
	return aws.ToString(out.MessageId)
}
