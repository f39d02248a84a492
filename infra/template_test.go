package infra

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The six functions (internal/lambdafn) and the environment variables each
// must get from template.yaml (lambdafn.ReadEnv refuses to start without
// them).
var contractEnv = map[string][]string{
	"WebhookFunction":     {"RUNFLEET_TABLE", "RUNFLEET_QUEUE_URL", "RUNFLEET_CONFIG_PARAMETER", "LOG_LEVEL", "RUNFLEET_WEBHOOK_SECRET_ARN"},
	"WorkerFunction":      {"RUNFLEET_TABLE", "RUNFLEET_QUEUE_URL", "RUNFLEET_CONFIG_PARAMETER", "LOG_LEVEL", "RUNFLEET_GITHUB_SECRET_ARN", "RUNFLEET_METADATA_URL", "RUNFLEET_INSTANCE_TOKEN_KEY_ARN", "RUNFLEET_WORKER_TIMEOUT"},
	"ForceDeleteFunction": {"RUNFLEET_TABLE", "RUNFLEET_QUEUE_URL", "RUNFLEET_CONFIG_PARAMETER", "LOG_LEVEL", "RUNFLEET_GITHUB_SECRET_ARN"},
	"ReconcilerFunction":  {"RUNFLEET_TABLE", "RUNFLEET_QUEUE_URL", "RUNFLEET_CONFIG_PARAMETER", "LOG_LEVEL", "RUNFLEET_GITHUB_SECRET_ARN", "RUNFLEET_WORKER_TIMEOUT"},
	"MetadataFunction":    {"RUNFLEET_TABLE", "RUNFLEET_QUEUE_URL", "RUNFLEET_CONFIG_PARAMETER", "LOG_LEVEL", "RUNFLEET_INSTANCE_TOKEN_KEY_ARN"},
	"ListenerFunction":    {"RUNFLEET_TABLE", "RUNFLEET_QUEUE_URL", "RUNFLEET_CONFIG_PARAMETER", "LOG_LEVEL", "RUNFLEET_GITHUB_SECRET_ARN"},
}

// providerFunctions build a provider per pool (package work); the others
// never depend on a provider binary or the provider's permissions.
var providerFunctions = []string{"WorkerFunction", "ReconcilerFunction"}

// Secret values reach the functions from Secrets Manager through
// config.Parse's lookupEnv; as real environment variables they would show
// in the Lambda console and API.
var forbiddenEnv = []string{"RUNFLEET_WEBHOOK_SECRET", "RUNFLEET_GITHUB_PRIVATE_KEY", "RUNFLEET_GITHUB_TOKEN", "RUNFLEET_INSTANCE_TOKEN_KEY"}

func TestTableMatchesSchemaFile(t *testing.T) {
	tpl := loadTemplate(t)
	id := tpl.stateTable(t)
	table := tpl.resource(id)

	data, err := os.ReadFile("dynamodb-table.json")
	if err != nil {
		t.Fatal(err)
	}
	var schema struct{ Properties map[string]any }
	if err := json.Unmarshal(data, &schema); err != nil {
		t.Fatalf("dynamodb-table.json: %v", err)
	}
	props := canonical(t, table.get("Properties")).(map[string]any)
	want := canonical(t, schema.Properties).(map[string]any)
	// Attribute definitions are a set; their order means nothing.
	sortAttributeDefinitions(props)
	sortAttributeDefinitions(want)

	for key, wantValue := range want {
		if !reflect.DeepEqual(props[key], wantValue) {
			t.Errorf("%s.Properties.%s = %s\nbut dynamodb-table.json has %s", id, key, asJSON(props[key]), asJSON(wantValue))
		}
	}
	extras := map[string]any{
		"PointInTimeRecoverySpecification": map[string]any{"PointInTimeRecoveryEnabled": true},
		"SSESpecification":                 map[string]any{"SSEEnabled": true},
	}
	for key, value := range props {
		if _, ok := want[key]; ok {
			continue
		}
		extra, allowed := extras[key]
		if !allowed {
			t.Errorf("%s.Properties.%s is not in dynamodb-table.json; add it there (and to internal/store/dynamodb/schema.go) first", id, key)
			continue
		}
		if !reflect.DeepEqual(value, extra) {
			t.Errorf("%s.Properties.%s = %s, want %s", id, key, asJSON(value), asJSON(extra))
		}
	}
	for key := range extras {
		if _, ok := props[key]; !ok {
			t.Errorf("%s.Properties.%s is missing", id, key)
		}
	}
	for _, policy := range []string{"DeletionPolicy", "UpdateReplacePolicy"} {
		if got := table.get(policy).str(); got != "Retain" {
			t.Errorf("%s.%s = %q, want Retain: the table is the only record of which machines runfleet owns", id, policy, got)
		}
	}
}

func TestFunctionsFollowTheContract(t *testing.T) {
	tpl := loadTemplate(t)
	globals := tpl.get("Globals").get("Function")
	fns := tpl.resourcesOfType("AWS::Serverless::Function")
	if got, want := sortedKeys(fns), sortedKeys(contractEnv); !slices.Equal(got, want) {
		t.Fatalf("functions = %v, want %v", got, want)
	}
	tableID := tpl.stateTable(t)
	for id, wantVars := range contractEnv {
		fn := tpl.resource(id)
		prop := func(name string) value { return fn.get("Properties").get(name).or(globals.get(name)) }
		checks := map[string]string{
			"Runtime": "provided.al2023",
			"Handler": "bootstrap",
			"CodeUri": ".",
		}
		for name, want := range checks {
			if got := prop(name).str(); got != want {
				t.Errorf("%s %s = %q, want %q", id, name, got, want)
			}
		}
		if got := asJSON(prop("Architectures").v); got != `["arm64"]` {
			t.Errorf("%s Architectures = %s, want [arm64]", id, got)
		}
		if got := fn.get("Metadata").get("BuildMethod").str(); got != "makefile" {
			t.Errorf("%s Metadata.BuildMethod = %q, want makefile", id, got)
		}

		env := map[string]any{}
		for _, vars := range []value{globals.get("Environment").get("Variables"), fn.get("Properties").get("Environment").get("Variables")} {
			for k, v := range vars.mapping() {
				env[k] = v
			}
		}
		for _, name := range wantVars {
			if _, ok := env[name]; !ok {
				t.Errorf("%s lacks environment variable %s", id, name)
			}
		}
		for _, name := range forbiddenEnv {
			if _, ok := env[name]; ok {
				t.Errorf("%s has %s in its environment: secrets must come from Secrets Manager", id, name)
			}
		}
		if got := (value{env["RUNFLEET_TABLE"]}).ref(); got != tableID {
			t.Errorf("%s RUNFLEET_TABLE = %s, want !Ref %s", id, asJSON(env["RUNFLEET_TABLE"]), tableID)
		}
		if queue := (value{env["RUNFLEET_QUEUE_URL"]}).ref(); tpl.resource(queue).get("Type").str() != "AWS::SQS::Queue" {
			t.Errorf("%s RUNFLEET_QUEUE_URL = %s, want !Ref of an SQS queue", id, asJSON(env["RUNFLEET_QUEUE_URL"]))
		}
	}
}

func TestWorkQueueOutlastsTheWorker(t *testing.T) {
	tpl := loadTemplate(t)
	worker := tpl.resource("WorkerFunction").get("Properties")
	var event value
	for _, ev := range worker.get("Events").mapping() {
		if e := (value{ev}); e.get("Type").str() == "SQS" {
			event = e.get("Properties")
		}
	}
	if event.v == nil {
		t.Fatal("WorkerFunction has no SQS event")
	}
	if got := event.get("BatchSize").num(t); got != 10 {
		t.Errorf("BatchSize = %v, want 10", got)
	}
	window := event.get("MaximumBatchingWindowInSeconds").num(t)
	if window != 0 {
		t.Errorf("MaximumBatchingWindowInSeconds = %v, want 0 (latency)", window)
	}
	if !slices.Contains(event.get("FunctionResponseTypes").strs(), "ReportBatchItemFailures") {
		t.Errorf("FunctionResponseTypes = %s, want [ReportBatchItemFailures]", asJSON(event.get("FunctionResponseTypes").v))
	}
	if event.get("ScalingConfig").get("MaximumConcurrency").v == nil {
		t.Error("ScalingConfig.MaximumConcurrency is not set")
	}

	queueID := event.get("Queue").getAtt()
	queue := tpl.resource(queueID)
	if queue.get("Type").str() != "AWS::SQS::Queue" {
		t.Fatalf("the worker's SQS event reads %s, not a queue of this template", asJSON(event.get("Queue").v))
	}
	timeout := worker.get("Timeout").or(tpl.get("Globals").get("Function").get("Timeout"))
	seconds := 3.0 // Lambda's default
	if timeout.v != nil {
		seconds = timeout.num(t)
	}
	visibility := queue.get("Properties").get("VisibilityTimeout").num(t)
	if visibility < 6*seconds+window {
		t.Errorf("%s VisibilityTimeout = %v s, want ≥ 6 × WorkerFunction Timeout (%v s) + batching window (AWS's rule for SQS event sources)", queueID, visibility, seconds)
	}
}

// The reconciler treats an instance still creating after the worker's
// timeout as abandoned, so the timeout it is told must be the worker's
// real one: shorter would recover instances a live worker is creating,
// longer would leave jobs waiting.
func TestWorkerTimeoutIsTheWorkersTimeout(t *testing.T) {
	tpl := loadTemplate(t)
	want := time.Duration(tpl.resource("WorkerFunction").get("Properties").get("Timeout").num(t)) * time.Second
	for id := range contractEnv {
		v := tpl.resource(id).get("Properties").get("Environment").get("Variables").get("RUNFLEET_WORKER_TIMEOUT")
		if v.v == nil {
			continue
		}
		if got, err := time.ParseDuration(v.str()); err != nil || got != want {
			t.Errorf("%s RUNFLEET_WORKER_TIMEOUT = %s, want %s (WorkerFunction's Timeout)", id, asJSON(v.v), want)
		}
	}
}

// The webhook's reservation is a parameter whose "" and "0" mean none; the
// worker's is its event source's MaximumConcurrency (a lower reservation
// would throttle the event source), unless switched off. With the defaults
// both fit an account at AWS's default limit of 1000, which must keep 100
// unreserved. No other function reserves any.
func TestReservedConcurrency(t *testing.T) {
	tpl := loadTemplate(t)
	defaults := map[string]string{}
	for name, p := range tpl.get("Parameters").mapping() {
		if d := (value{p}).get("Default").v; d != nil {
			defaults[name] = fmt.Sprint(d)
		}
	}
	with := func(name, v string) map[string]string {
		params := maps.Clone(defaults)
		params[name] = v
		return params
	}

	webhook := tpl.resource("WebhookFunction").get("Properties").get("ReservedConcurrentExecutions")
	cond, reserved, none := ifBranches(t, webhook)
	if reserved.ref() != "WebhookReservedConcurrency" || none.ref() != "AWS::NoValue" {
		t.Fatalf("WebhookFunction ReservedConcurrentExecutions = %s, want !If [cond, !Ref WebhookReservedConcurrency, !Ref AWS::NoValue]", asJSON(webhook.v))
	}
	for v, want := range map[string]bool{"": false, "0": false, "10": true, "25": true} {
		if got := tpl.condition(t, cond, with("WebhookReservedConcurrency", v)); got != want {
			t.Errorf("WebhookReservedConcurrency %q: condition %s is %t, want %t", v, cond, got, want)
		}
	}

	worker := tpl.resource("WorkerFunction").get("Properties")
	cond, reserved, none = ifBranches(t, worker.get("ReservedConcurrentExecutions"))
	var maxConcurrency string
	for _, ev := range worker.get("Events").mapping() {
		if e := (value{ev}); e.get("Type").str() == "SQS" {
			maxConcurrency = e.get("Properties").get("ScalingConfig").get("MaximumConcurrency").ref()
		}
	}
	if maxConcurrency == "" || reserved.ref() != maxConcurrency || none.ref() != "AWS::NoValue" {
		t.Fatalf("WorkerFunction ReservedConcurrentExecutions = %s, want !If [cond, !Ref %s (the event source's MaximumConcurrency), !Ref AWS::NoValue]",
			asJSON(worker.get("ReservedConcurrentExecutions").v), maxConcurrency)
	}
	if !tpl.condition(t, cond, defaults) {
		t.Errorf("the worker reserves no concurrency by default: it could take the whole account's")
	}

	total := 0
	for _, name := range []string{"WebhookReservedConcurrency", maxConcurrency} {
		n, err := strconv.Atoi(defaults[name])
		if err != nil {
			t.Fatalf("%s default %q is not a number", name, defaults[name])
		}
		total += n
	}
	if total > 1000-100 {
		t.Errorf("the default reservations total %d, more than an account at the default limit (1000) may reserve (900)", total)
	}
	for id := range contractEnv {
		if id != "WebhookFunction" && id != "WorkerFunction" && tpl.resource(id).get("Properties").get("ReservedConcurrentExecutions").v != nil {
			t.Errorf("%s reserves concurrency; only the webhook and the worker need a guarantee", id)
		}
	}
}

// External provider binaries come in a layer: every function that builds
// providers needs it, and the others never get it, so intake can never
// depend on one.
func TestProviderLayerGoesWhereProvidersAreBuilt(t *testing.T) {
	tpl := loadTemplate(t)
	for id := range contractEnv {
		layers := tpl.resource(id).get("Properties").get("Layers")
		if !slices.Contains(providerFunctions, id) {
			if layers.v != nil {
				t.Errorf("%s has Layers %s, but builds no provider", id, asJSON(layers.v))
			}
			continue
		}
		cond, layer, none := ifBranches(t, layers)
		if cond != "HasProviderLayer" || len(layer.list()) != 1 || (value{layer.list()[0]}).ref() != "ProviderLayerArn" || none.ref() != "AWS::NoValue" {
			t.Errorf("%s Layers = %s, want !If [HasProviderLayer, [!Ref ProviderLayerArn], !Ref AWS::NoValue]", id, asJSON(layers.v))
		}
	}
}

func TestQueuesAreEncryptedAndDeadLettered(t *testing.T) {
	tpl := loadTemplate(t)
	work := tpl.resource("WorkQueue").get("Properties")
	redrive := work.get("RedrivePolicy")
	dlqID := redrive.get("deadLetterTargetArn").getAtt()
	if tpl.resource(dlqID).get("Type").str() != "AWS::SQS::Queue" || dlqID == "WorkQueue" {
		t.Fatalf("WorkQueue redrive target = %s, want !GetAtt <another queue>.Arn", asJSON(redrive.get("deadLetterTargetArn").v))
	}
	maxReceive := redrive.get("maxReceiveCount")
	if maxReceive.v == nil {
		t.Fatal("WorkQueue RedrivePolicy.maxReceiveCount is not set")
	}
	if param := maxReceive.ref(); param != "" {
		maxReceive = tpl.get("Parameters").get(param).get("Default")
	}
	if got := maxReceive.num(t); got < 1 {
		t.Errorf("maxReceiveCount = %v, want ≥ 1", got)
	}
	for _, id := range []string{"WorkQueue", dlqID} {
		props := tpl.resource(id).get("Properties")
		if props.get("SqsManagedSseEnabled").v != true && props.get("KmsMasterKeyId").v == nil {
			t.Errorf("%s is not encrypted at rest", id)
		}
	}
	workRetention := work.get("MessageRetentionPeriod").num(t)
	dlqRetention := tpl.resource(dlqID).get("Properties").get("MessageRetentionPeriod").num(t)
	if dlqRetention <= workRetention {
		t.Errorf("dead-letter retention %v s ≤ work retention %v s: dead letters could expire before anyone looks", dlqRetention, workRetention)
	}
}

func TestEveryFunctionHasALogGroupWithRetention(t *testing.T) {
	tpl := loadTemplate(t)
	groups := map[string]value{}
	for id := range tpl.resourcesOfType("AWS::Logs::LogGroup") {
		groups[id] = tpl.resource(id).get("Properties")
	}
	for id := range contractEnv {
		props := tpl.resource(id).get("Properties")
		name := props.get("FunctionName").sub()
		if name == "" {
			t.Errorf("%s FunctionName = %s, want an explicit !Sub name (the log group is named after it)", id, asJSON(props.get("FunctionName").v))
			continue
		}
		groupID := props.get("LoggingConfig").get("LogGroup").ref()
		group, ok := groups[groupID]
		if !ok {
			t.Errorf("%s LoggingConfig.LogGroup = %s, want !Ref of a log group of this template", id, asJSON(props.get("LoggingConfig").v))
			continue
		}
		if got, want := group.get("LogGroupName").sub(), "/aws/lambda/"+name; got != want {
			t.Errorf("%s LogGroupName = %q, want %q", groupID, got, want)
		}
		if group.get("RetentionInDays").v == nil {
			t.Errorf("%s has no RetentionInDays: logs would be kept (and billed) forever", groupID)
		}
	}
}

// IAM statements name this stack's resources; "*" only where AWS has no
// resource-level permission, which none of runfleet's actions need.
func TestPoliciesNameTheirResources(t *testing.T) {
	tpl := loadTemplate(t)
	for id := range tpl.resourcesOfType("AWS::IAM::Role") {
		for _, policy := range tpl.resource(id).get("Properties").get("Policies").list() {
			walkStatements(value{policy}.get("PolicyDocument").get("Statement"), func(st value) {
				resources := st.get("Resource")
				for _, r := range append(resources.list(), resources.v) {
					if s, ok := r.(string); ok && strings.Contains(s, "*") {
						t.Errorf("%s statement %s has wildcard resource %q", id, st.get("Sid").str(), s)
					}
				}
				if resources.v == nil {
					t.Errorf("%s statement %s has no Resource", id, st.get("Sid").str())
				}
			})
		}
	}
}

func TestOutputs(t *testing.T) {
	tpl := loadTemplate(t)
	for _, name := range []string{"WebhookUrl", "MetadataUrl", "ForceDeleteFunctionName", "TableName", "WorkQueueUrl", "DeadLetterQueueUrl"} {
		if tpl.get("Outputs").get(name).get("Value").v == nil {
			t.Errorf("output %s is missing", name)
		}
	}
}
