package lambdafn_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambdacontext"
	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	sqsapi "github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	ssmtypes "github.com/aws/aws-sdk-go-v2/service/ssm/types"

	"github.com/runfleet/runfleet/internal/config"
	"github.com/runfleet/runfleet/internal/github"
	ghsim "github.com/runfleet/runfleet/internal/github/simulated"
	"github.com/runfleet/runfleet/internal/lambdafn"
	"github.com/runfleet/runfleet/internal/lambdafn/work"
	"github.com/runfleet/runfleet/internal/runner"
	dynamostore "github.com/runfleet/runfleet/internal/store/dynamodb"
	"github.com/runfleet/runfleet/internal/testenv"
	"github.com/runfleet/runfleet/internal/testlog"
	"github.com/runfleet/runfleet/internal/webhook"
	"github.com/runfleet/runfleet/providers"
	"github.com/runfleet/runfleet/providers/simulated"
)

func TestMain(m *testing.M) { testenv.Main(m) }

const (
	testSecret = "lambda-test-webhook-secret"
	linuxPool  = "linux-x64"
)

// testConfig is the YAML stored in SSM, exactly as an operator would write
// it for embedded mode.
const testConfig = `controller_id: lambda-test
github:
  simulated: true
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
      type: simulated
`

// workerTimeout is RUNFLEET_WORKER_TIMEOUT as template.yaml sets it.
const workerTimeout = "300s"

// stack is one test's deployment: a fresh DynamoDB table in DynamoDB Local,
// a fresh SQS queue, the config in SSM and the webhook secret in Secrets
// Manager (moto), with the functions' environment variables set as
// template.yaml sets them. Functions built from it share one simulated
// GitHub and one set of simulated providers, as real ones would be shared.
type stack struct {
	t        testing.TB
	aws      aws.Config
	sqs      *sqsapi.Client
	ddb      *dynamodb.Client
	store    *dynamostore.Store
	env      lambdafn.Env
	gh       *ghsim.GitHub
	provs    map[string]providers.Provider
	logs     *testlog.Buffer
	logLevel slog.Level
	// metrics collects the functions' EMF lines (Options.Metrics).
	metrics *testlog.Buffer
	// github, when set, is the functions' GitHub instead of gh.
	github github.GitHub
	sends  *sendRecorder
	meter  *awsMeter
	// requests numbers Lambda request ids.
	requests atomic.Int64
}

type stackOptions struct {
	config string
	// meter, when set, counts the AWS requests and handler invocations of
	// the functions and the event source mapping (the benchmark).
	meter *awsMeter
	// infoLogs logs at info, as deployed (LOG_LEVEL's default), instead of
	// debug.
	infoLogs bool
	// visibility is the queue's visibility timeout (default 30 s, as
	// template.yaml sets it well above the worker's timeout).
	visibility time.Duration
	// github replaces the shared simulated GitHub (the metrics tests use
	// the real client against a fake GitHub server).
	github github.GitHub
}

func newStack(t testing.TB, opts stackOptions) *stack {
	t.Helper()
	if opts.config == "" {
		opts.config = testConfig
	}
	if opts.visibility == 0 {
		opts.visibility = 30 * time.Second
	}
	testenv.SetEnv(t)
	ctx := context.Background()
	awsCfg, err := awsconfig.LoadDefaultConfig(ctx)
	if err != nil {
		t.Fatal(err)
	}
	level := slog.LevelDebug
	if opts.infoLogs {
		level = slog.LevelInfo
	}
	s := &stack{t: t, logLevel: level, logs: &testlog.Buffer{}, metrics: &testlog.Buffer{}, sends: &sendRecorder{}, gh: ghsim.New(), github: opts.github}
	awsCfg.APIOptions = append(awsCfg.APIOptions, s.sends.middleware)
	if opts.meter != nil {
		s.meter = opts.meter
		awsCfg.APIOptions = append(awsCfg.APIOptions, opts.meter.middleware)
	}
	s.aws = awsCfg
	s.ddb = dynamodb.NewFromConfig(awsCfg, disableChecksum)
	s.sqs = sqsapi.NewFromConfig(awsCfg)

	table := testenv.UniqueName(t, "runfleet")
	if err := dynamostore.CreateTable(ctx, s.ddb, table); err != nil {
		t.Fatal(err)
	}
	s.store = dynamostore.New(s.ddb, table)
	q, err := s.sqs.CreateQueue(ctx, &sqsapi.CreateQueueInput{
		QueueName:  aws.String(testenv.UniqueName(t, "work")),
		Attributes: map[string]string{"VisibilityTimeout": strconv.Itoa(int(opts.visibility.Seconds()))},
	})
	if err != nil {
		t.Fatal(err)
	}
	param := "/" + testenv.UniqueName(t, "runfleet") + "/config"
	if _, err := ssm.NewFromConfig(awsCfg).PutParameter(ctx, &ssm.PutParameterInput{
		Name: aws.String(param), Type: ssmtypes.ParameterTypeSecureString, Value: aws.String(opts.config),
	}); err != nil {
		t.Fatal(err)
	}
	secret, err := secretsmanager.NewFromConfig(awsCfg).CreateSecret(ctx, &secretsmanager.CreateSecretInput{
		Name: aws.String(testenv.UniqueName(t, "webhook-secret")), SecretString: aws.String(testSecret),
	})
	if err != nil {
		t.Fatal(err)
	}
	for name, value := range map[string]string{
		lambdafn.EnvTable:            table,
		lambdafn.EnvQueueURL:         aws.ToString(q.QueueUrl),
		lambdafn.EnvConfigParameter:  param,
		lambdafn.EnvWebhookSecretARN: aws.ToString(secret.ARN),
		lambdafn.EnvGitHubSecretARN:  "",
		lambdafn.EnvLogLevel:         "debug",
		lambdafn.EnvWorkerTimeout:    workerTimeout,
	} {
		t.Setenv(name, value)
	}
	s.env, err = lambdafn.ReadEnv(lambdafn.RoleWebhook, os.LookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	s.provs = simulatedProviders(t, opts.config)
	return s
}

// parseTestConfig parses a test config for what the harness reads of it
// (its pools), every secret answered with a stand-in of the right form.
func parseTestConfig(yaml string) (*config.Config, error) {
	return config.Parse([]byte(yaml), func(name string) (string, bool) {
		if strings.Contains(name, "PRIVATE_KEY") || strings.Contains(name, "APP_KEY") {
			return "-----BEGIN RSA PRIVATE KEY-----\nAAAA\n-----END RSA PRIVATE KEY-----\n", true
		}
		return testSecret, true
	}, nil)
}

func disableChecksum(o *dynamodb.Options) {
	// DynamoDB Local's error responses carry a CRC32 that does not match.
	o.DisableValidateResponseChecksum = true
}

// simulatedProviders builds one simulated provider per pool of the config.
func simulatedProviders(t testing.TB, yaml string) map[string]providers.Provider {
	t.Helper()
	cfg, err := parseTestConfig(yaml)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]providers.Provider{}
	for _, pool := range cfg.Pools {
		p, err := simulated.New(pool.Provider.Settings)
		if err != nil {
			t.Fatal(err)
		}
		out[pool.Name] = p
	}
	return out
}

// The functions, built the way deployed ones are, from the environment
// variables, but with the test's shared GitHub and providers, a logger and
// a metrics sink the test can read.

func (s *stack) webhook() lambdafn.FunctionURLHandler {
	return lambdafn.NewWebhook(s.optionsFunc(lambdafn.RoleWebhook), s.logs.Logger(s.logLevel))
}

func (s *stack) metadata() lambdafn.FunctionURLHandler {
	return lambdafn.NewMetadata(s.optionsFunc(lambdafn.RoleMetadata), s.logs.Logger(s.logLevel))
}

func (s *stack) worker() work.SQSHandler {
	return work.NewWorker(s.workOptionsFunc(lambdafn.RoleWorker), s.logs.Logger(s.logLevel))
}

func (s *stack) reconciler() work.ScheduleHandler {
	return work.NewReconciler(s.workOptionsFunc(lambdafn.RoleReconciler), s.logs.Logger(s.logLevel))
}

func (s *stack) forceDelete() work.ForceDeleteHandler {
	return work.NewForceDelete(s.workOptionsFunc(lambdafn.RoleForceDelete), s.logs.Logger(s.logLevel))
}

// options are role's Options, read from the environment.
func (s *stack) options(role lambdafn.Role) (lambdafn.Options, error) {
	env, err := lambdafn.ReadEnv(role, os.LookupEnv)
	return lambdafn.Options{
		Env:             env,
		AWS:             s.aws,
		Logger:          s.logs.Logger(s.logLevel),
		DynamoDBOptions: []func(*dynamodb.Options){disableChecksum},
		Metrics:         s.metrics,
	}, err
}

func (s *stack) optionsFunc(role lambdafn.Role) lambdafn.OptionsFunc {
	return func(context.Context) (lambdafn.Options, error) { return s.options(role) }
}

// workOptions are role's work.Options: its Options with the shared GitHub
// and providers.
func (s *stack) workOptions(role lambdafn.Role) (work.Options, error) {
	opts, err := s.options(role)
	var gh github.GitHub = s.gh
	if s.github != nil {
		gh = s.github
	}
	return work.Options{Options: opts, GitHub: gh, Providers: s.provs}, err
}

func (s *stack) workOptionsFunc(role lambdafn.Role) work.OptionsFunc {
	return func(context.Context) (work.Options, error) { return s.workOptions(role) }
}

func (s *stack) simulated(pool string) *simulated.Provider {
	return s.provs[pool].(*simulated.Provider)
}

// invocation is the context Lambda gives a handler, with a fresh request id.
func (s *stack) invocation() (context.Context, string) {
	id := fmt.Sprintf("req-%04d", s.requests.Add(1))
	ctx := lambdacontext.NewContext(context.Background(), &lambdacontext.LambdaContext{AwsRequestID: id})
	return ctx, id
}

// --- webhook deliveries ----------------------------------------------------

// jobPayload is a workflow_job delivery body for job id in the given action
// (runfleet's names for jobs' actions are GitHub's); runnerName is set for
// in_progress and completed.
func jobPayload(t testing.TB, action runner.JobAction, id int64, runnerName string) []byte {
	t.Helper()
	var payload map[string]any
	mustUnmarshal(t, readTestdata(t, "workflow-job.json"), &payload)
	payload["action"] = string(action)
	job := payload["workflow_job"].(map[string]any)
	job["id"] = id
	job["status"] = string(action)
	if runnerName != "" {
		// runner_id stays null: the harness does not know the id the
		// simulated GitHub gave the runner, and the engine compares ids
		// only when both are known.
		job["runner_name"] = runnerName
	}
	if action == runner.ActionCompleted {
		job["conclusion"] = "success"
	}
	body, err := json.MarshalIndent(payload, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return body
}

var deliverySeq atomic.Int64

// functionURLEvent is the documented Function URL event carrying body as
// Lambda sends a POST body: base64-encoded, signed over the raw bytes.
func functionURLEvent(t testing.TB, body []byte) events.LambdaFunctionURLRequest {
	t.Helper()
	var ev events.LambdaFunctionURLRequest
	mustUnmarshal(t, readTestdata(t, "function-url-event.json"), &ev)
	ev.Body = base64.StdEncoding.EncodeToString(body)
	ev.IsBase64Encoded = true
	ev.Headers["content-length"] = strconv.Itoa(len(body))
	ev.Headers["x-github-delivery"] = fmt.Sprintf("d0c0ffee-0000-4000-8000-%012d", deliverySeq.Add(1))
	ev.Headers["x-hub-signature-256"] = webhook.Sign([]byte(testSecret), body)
	return ev
}

// deliver sends one webhook through the webhook function and returns the
// HTTP status and decoded reply.
func (s *stack) deliver(t testing.TB, fn lambdafn.FunctionURLHandler, ev events.LambdaFunctionURLRequest) (int, webhook.Reply) {
	t.Helper()
	ctx, _ := s.invocation()
	started := time.Now()
	resp, err := fn(asCaller(ctx, "webhook"), ev)
	took := time.Since(started)
	if err != nil {
		t.Fatalf("HandleWebhook returned an error (a Function URL would answer 502): %v", err)
	}
	if ct := resp.Headers["Content-Type"]; ct != "application/json" {
		t.Errorf("Content-Type = %q, want application/json", ct)
	}
	var reply webhook.Reply
	mustUnmarshal(t, []byte(resp.Body), &reply)
	if s.meter != nil {
		kind := reply.Status
		if reply.Outcome != nil {
			kind = reply.Action
		}
		s.meter.handler("webhook "+kind, took)
	}
	return resp.StatusCode, reply
}

// --- the event source mapping --------------------------------------------

// poll plays the SQS event source mapping once: receive up to ten messages
// from the real queue, hand them to the worker as the SQS event Lambda
// would build, then delete the ones not reported as batch item failures.
// It returns the records delivered (none if the queue stayed empty for wait)
// and the worker's response.
func (s *stack) poll(t testing.TB, worker work.SQSHandler, wait time.Duration) ([]events.SQSMessage, events.SQSEventResponse) {
	t.Helper()
	ctx := asCaller(context.Background(), "esm")
	out, err := s.sqs.ReceiveMessage(ctx, &sqsapi.ReceiveMessageInput{
		QueueUrl:                    aws.String(s.env.QueueURL),
		MaxNumberOfMessages:         10,
		WaitTimeSeconds:             int32(wait / time.Second),
		MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameAll},
		MessageAttributeNames:       []string{"All"},
	})
	if err != nil {
		t.Fatalf("ReceiveMessage: %v", err)
	}
	if len(out.Messages) == 0 {
		return nil, events.SQSEventResponse{}
	}
	event := s.sqsEvent(t, out.Messages)
	ictx, _ := s.invocation()
	started := time.Now()
	resp, err := worker(asCaller(ictx, "worker"), event)
	took := time.Since(started)
	if err != nil {
		t.Fatalf("HandleSQS returned a function error, which fails the whole batch (P1): %v", err)
	}
	if s.meter != nil {
		s.meter.handler("worker "+batchKind(event), took)
	}
	deleteHandled(t, s.sqs, s.env.QueueURL, event, resp)
	return event.Records, resp
}

// sqsEvent builds the event Lambda would deliver for msgs, starting from
// the documented SQS event in testdata and filling each record's fields.
func (s *stack) sqsEvent(t testing.TB, msgs []sqstypes.Message) events.SQSEvent {
	t.Helper()
	return sqsEventOf(t, msgs)
}

// sqsEventOf is the SQS event Lambda's event source mapping builds for msgs.
func sqsEventOf(t testing.TB, msgs []sqstypes.Message) events.SQSEvent {
	t.Helper()
	var template struct {
		Records []map[string]any `json:"Records"`
	}
	mustUnmarshal(t, readTestdata(t, "sqs-event.json"), &template)
	records := make([]map[string]any, 0, len(msgs))
	for _, m := range msgs {
		rec := map[string]any{}
		for k, v := range template.Records[0] {
			rec[k] = v
		}
		attrs := map[string]any{}
		for name, v := range m.MessageAttributes {
			attrs[name] = map[string]any{"stringValue": aws.ToString(v.StringValue), "stringListValues": []string{}, "binaryListValues": []string{}, "dataType": aws.ToString(v.DataType)}
		}
		rec["messageId"] = aws.ToString(m.MessageId)
		rec["receiptHandle"] = aws.ToString(m.ReceiptHandle)
		rec["body"] = aws.ToString(m.Body)
		rec["md5OfBody"] = aws.ToString(m.MD5OfBody)
		rec["attributes"] = m.Attributes
		rec["messageAttributes"] = attrs
		records = append(records, rec)
	}
	raw, err := json.Marshal(map[string]any{"Records": records})
	if err != nil {
		t.Fatal(err)
	}
	var ev events.SQSEvent
	mustUnmarshal(t, raw, &ev)
	return ev
}

// drain polls until until() holds, failing the test after timeout.
func (s *stack) drain(t testing.TB, worker work.SQSHandler, timeout time.Duration, what string, until func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !until() {
		if time.Now().After(deadline) {
			t.Fatalf("after %s: still waiting for %s", timeout, what)
		}
		s.poll(t, worker, time.Second)
	}
}

// send puts a raw body on the work queue, as a producer bug or an older
// runfleet might.
func (s *stack) send(t testing.TB, body string) string {
	t.Helper()
	out, err := s.sqs.SendMessage(context.Background(), &sqsapi.SendMessageInput{QueueUrl: aws.String(s.env.QueueURL), MessageBody: aws.String(body)})
	if err != nil {
		t.Fatal(err)
	}
	return aws.ToString(out.MessageId)
}

// queueDepth is (visible, in flight, delayed) messages of the work queue.
func (s *stack) queueDepth(t testing.TB) (visible, inFlight, delayed int) {
	t.Helper()
	out, err := s.sqs.GetQueueAttributes(context.Background(), &sqsapi.GetQueueAttributesInput{
		QueueUrl: aws.String(s.env.QueueURL),
		AttributeNames: []sqstypes.QueueAttributeName{
			sqstypes.QueueAttributeNameApproximateNumberOfMessages,
			sqstypes.QueueAttributeNameApproximateNumberOfMessagesNotVisible,
			sqstypes.QueueAttributeNameApproximateNumberOfMessagesDelayed,
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	n := func(a sqstypes.QueueAttributeName) int {
		v, _ := strconv.Atoi(out.Attributes[string(a)])
		return v
	}
	return n(sqstypes.QueueAttributeNameApproximateNumberOfMessages),
		n(sqstypes.QueueAttributeNameApproximateNumberOfMessagesNotVisible),
		n(sqstypes.QueueAttributeNameApproximateNumberOfMessagesDelayed)
}

// --- store -----------------------------------------------------------------

func (s *stack) instance(t testing.TB, name string) *runner.Instance {
	t.Helper()
	inst, err := s.store.GetInstance(context.Background(), name)
	if err != nil {
		t.Fatalf("GetInstance(%s): %v", name, err)
	}
	return inst
}

func (s *stack) hasStatus(name string, want runner.Status) func() bool {
	return func() bool {
		inst, err := s.store.GetInstance(context.Background(), name)
		return err == nil && inst.Status == want
	}
}

// --- logs ------------------------------------------------------------------
