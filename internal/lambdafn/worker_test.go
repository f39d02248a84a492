package lambdafn_test

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	sqsapi "github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/runfleet/runfleet/internal/engine"
	"github.com/runfleet/runfleet/internal/lambdafn"
	"github.com/runfleet/runfleet/internal/runner"
	"github.com/runfleet/runfleet/internal/testenv"
	"github.com/runfleet/runfleet/providers"
	"github.com/runfleet/runfleet/providers/simulated"
)

// twoPoolConfig adds a pool whose provider the test can make panic.
const twoPoolConfig = testConfig + `  - name: arm64
    owner: octo-org
    labels: [self-hosted, linux, arm64]
    max_runners: 50
    provider:
      type: simulated
`

// panickingProvider is a provider with a bug: while armed, CreateInstance
// panics.
type panickingProvider struct {
	providers.Provider
	armed atomic.Bool
}

func (p *panickingProvider) CreateInstance(ctx context.Context, req providers.CreateRequest) (providers.Instance, error) {
	if p.armed.Load() {
		panic("provider bug: index out of range [3] with length 3")
	}
	return p.Provider.CreateInstance(ctx, req)
}

// P1: one batch holding a record whose store read fails and a record whose
// provider panics, between good records. Only those two come back as batch
// item failures; the good ones complete; the failed two stay on the queue
// and are handled once the fault is gone. Nothing is dropped.
func TestOnlyFailingRecordsAreBatchItemFailures(t *testing.T) {
	s := newStack(t, stackOptions{config: twoPoolConfig, visibility: templateVisibility})
	buggy := &panickingProvider{Provider: s.provs["arm64"]}
	buggy.armed.Store(true)
	s.provs["arm64"] = buggy
	intake, worker := s.webhook(), s.worker()

	good := []string{s.queue(t, intake, 7000000301, "x64"), s.queue(t, intake, 7000000304, "x64")}
	poisoned := s.queue(t, intake, 7000000302, "x64")
	panicking := s.queue(t, intake, 7000000303, "arm64")
	s.setVersionAttribute(t, poisoned, &ddbtypes.AttributeValueMemberS{Value: "not-a-number"})

	records, resp := s.poll(t, worker, 5*time.Second)
	if len(records) != 4 {
		t.Fatalf("batch of %d records, want all 4 in one batch", len(records))
	}
	failed := failedInstances(t, records, resp)
	if want := []string{poisoned, panicking}; !sameSet(failed, want) {
		t.Fatalf("batch item failures for %v, want exactly %v", failed, want)
	}
	for _, name := range good {
		if got := s.instance(t, name).Status; got != runner.StatusRunning {
			t.Fatalf("%s: %s, want running despite its batch-mates failing", name, got)
		}
	}
	if lines := s.logs.Lines(t, map[string]any{"level": "ERROR", "message_id": messageIDOf(records, panicking)}); len(lines) == 0 || lines[0]["panic"] == nil {
		t.Fatalf("the panic is not logged at error level with its message id: %v", lines)
	}
	if _, inFlight, _ := s.queueDepth(t); inFlight != 2 {
		t.Fatalf("%d messages in flight after the batch, want the 2 failed ones kept for retry", inFlight)
	}

	// The faults are fixed; the two come back after their retry backoffs
	// (jittered, so maybe in separate batches), long before the queue's
	// visibility timeout.
	buggy.armed.Store(false)
	s.setVersionAttribute(t, poisoned, &ddbtypes.AttributeValueMemberN{Value: "1"})
	var redelivered []events.SQSMessage
	for deadline := time.Now().Add(15 * time.Second); len(redelivered) < 2 && time.Now().Before(deadline); {
		records, resp = s.poll(t, worker, 5*time.Second)
		if len(resp.BatchItemFailures) != 0 {
			t.Fatalf("redelivered records failed again: %v", resp.BatchItemFailures)
		}
		redelivered = append(redelivered, records...)
	}
	if got := instancesOf(t, redelivered); !sameSet(got, []string{poisoned, panicking}) {
		t.Fatalf("redelivered %v within 15 s; want both failed records back, handled", got)
	}
	for _, rec := range redelivered {
		if rec.Attributes["ApproximateReceiveCount"] != "2" {
			t.Errorf("redelivered record has receive count %s, want 2", rec.Attributes["ApproximateReceiveCount"])
		}
	}
	if got := s.instance(t, poisoned).Status; got != runner.StatusRunning {
		t.Fatalf("%s after its store fault was repaired: %s, want running", poisoned, got)
	}
	// The panic struck after the create was claimed, so the redelivered
	// message is stale and the instance waits in creating for the
	// reconciler (P6) — but its message was not lost in between.
	if got := s.instance(t, panicking).Status; got != runner.StatusCreating {
		t.Fatalf("%s: %s, want creating (claimed before the panic)", panicking, got)
	}
}

// templateVisibility is the work queue's visibility timeout in
// template.yaml: six times the worker's timeout, as SQS asks.
const templateVisibility = 1800 * time.Second

// A record that fails transiently is hidden for a short, growing backoff,
// not for the queue's 30-minute visibility timeout: it is not redelivered at
// once (no hot loop against a failing dependency), and it is redelivered
// within seconds.
func TestFailedRecordIsRetriedAfterABackoffNotTheVisibilityTimeout(t *testing.T) {
	s := newStack(t, stackOptions{visibility: templateVisibility})
	intake, worker := s.webhook(), s.worker()
	name := s.queue(t, intake, 7000000501, "x64")
	s.setVersionAttribute(t, name, &ddbtypes.AttributeValueMemberS{Value: "not-a-number"})

	records, resp := s.poll(t, worker, 5*time.Second)
	if len(records) != 1 || len(resp.BatchItemFailures) != 1 {
		t.Fatalf("%d records, failures %v; want the one record, failed", len(records), resp.BatchItemFailures)
	}
	failedAt := time.Now()
	lines := s.logs.Lines(t, map[string]any{"msg": "failed message scheduled for retry", "message_id": records[0].MessageId})
	if len(lines) != 1 {
		t.Fatalf("no log line scheduling the retry: %v", lines)
	}
	// First delivery: 5 s, jittered down to no less than half.
	if ms := lines[0]["backoff_ms"].(float64); ms < 2500 || ms > 5000 {
		t.Fatalf("first retry backoff %v ms, want 2500..5000", ms)
	}
	s.setVersionAttribute(t, name, &ddbtypes.AttributeValueMemberN{Value: "1"})

	if early, _ := s.poll(t, worker, time.Second); len(early) != 0 && time.Since(failedAt) < 2500*time.Millisecond {
		t.Fatalf("failed record redelivered after %v, before its backoff", time.Since(failedAt))
	}
	s.drain(t, worker, 10*time.Second, name+" running after its retry", s.hasStatus(name, runner.StatusRunning))
	if took := time.Since(failedAt); took < 2500*time.Millisecond {
		t.Fatalf("failed record handled again %v after failing, before its backoff", took)
	}
	if visible, inFlight, delayed := s.queueDepth(t); visible+inFlight+delayed != 0 {
		t.Fatalf("queue holds %d/%d/%d messages after the retry succeeded, want none", visible, inFlight, delayed)
	}
}

// A worker that cannot start (here its config parameter is missing, as an
// SSM or Secrets Manager outage at a cold start looks) returns no function
// error: every record of the batch is a batch item failure, hidden for the
// same short backoff as any failed record rather than the queue's 30-minute
// visibility timeout, and handled within seconds once the worker can start.
func TestWorkerThatCannotStartRetriesTheWholeBatchSoon(t *testing.T) {
	s := newStack(t, stackOptions{visibility: templateVisibility})
	names := []string{s.queue(t, s.webhook(), 7000001201, "x64"), s.queue(t, s.webhook(), 7000001202, "x64")}
	t.Setenv(lambdafn.EnvConfigParameter, "/"+testenv.UniqueName(t, "gone")+"/config")
	worker := s.worker()

	records, resp := s.poll(t, worker, 5*time.Second)
	if got := failedInstances(t, records, resp); len(records) != 2 || !sameSet(got, names) {
		t.Fatalf("%d records, batch item failures for %v; want both records of the batch failed", len(records), got)
	}
	for _, rec := range records {
		lines := s.logs.Lines(t, map[string]any{"msg": "failed message scheduled for retry", "message_id": rec.MessageId})
		if len(lines) != 1 {
			t.Fatalf("record %s: no log line scheduling its retry: %v", rec.MessageId, lines)
		}
		// First delivery: 5 s, jittered down to no less than half.
		if ms := lines[0]["backoff_ms"].(float64); ms < 2500 || ms > 5000 {
			t.Fatalf("record %s: retry backoff %v ms, want 2500..5000", rec.MessageId, ms)
		}
	}
	if lines := s.logs.Lines(t, map[string]any{"level": "WARN", "function": "worker", "records": float64(2)}); len(lines) != 1 {
		t.Fatalf("the unhandled batch is not logged once as a warning: %v", lines)
	}

	t.Setenv(lambdafn.EnvConfigParameter, s.env.ConfigParameter)
	s.drain(t, worker, 15*time.Second, "both instances running", func() bool {
		return s.hasStatus(names[0], runner.StatusRunning)() && s.hasStatus(names[1], runner.StatusRunning)()
	})
}

// Scheduling the retry is best effort: when SQS refuses it (here, a
// receipt handle it does not know), the record is still reported failed, so
// it comes back after the visibility timeout rather than being deleted.
func TestRecordStaysFailedWhenItsRetryCannotBeScheduled(t *testing.T) {
	s := newStack(t, stackOptions{})
	intake, worker := s.webhook(), s.worker()
	name := s.queue(t, intake, 7000000601, "x64")
	s.setVersionAttribute(t, name, &ddbtypes.AttributeValueMemberS{Value: "not-a-number"})

	out, err := s.sqs.ReceiveMessage(context.Background(), &sqsapi.ReceiveMessageInput{
		QueueUrl: aws.String(s.env.QueueURL), MaxNumberOfMessages: 10, WaitTimeSeconds: 5,
		MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameAll},
	})
	if err != nil || len(out.Messages) != 1 {
		t.Fatalf("ReceiveMessage: %d messages, %v; want 1", len(out.Messages), err)
	}
	event := s.sqsEvent(t, out.Messages)
	event.Records[0].ReceiptHandle = "not-a-receipt-handle"
	ctx, _ := s.invocation()
	resp, err := worker(ctx, event)
	if err != nil {
		t.Fatal(err)
	}
	if got := failedInstances(t, event.Records, resp); !slices.Equal(got, []string{name}) {
		t.Fatalf("batch item failures for %v, want %s", got, name)
	}
	lines := s.logs.Lines(t, map[string]any{"level": "WARN", "message_id": event.Records[0].MessageId,
		"msg": "could not schedule the failed message's retry; it comes back after the queue's visibility timeout instead"})
	if len(lines) != 1 || lines[0]["error"] == nil {
		t.Fatalf("no warning, with the error, that the retry could not be scheduled: %v", lines)
	}
}

// P14: malformed bodies (not JSON, a message version from the future) are
// logged at error level and acknowledged, never reported for retry, and the
// good record in the same batch completes.
func TestMalformedMessagesAreAcknowledgedNotRetried(t *testing.T) {
	s := newStack(t, stackOptions{})
	intake, worker := s.webhook(), s.worker()
	bad := map[string]string{
		s.send(t, `{"v":1,"kind":"create","instance":`):                   "not JSON",
		s.send(t, `{"v":99,"kind":"create","instance":"runfleet-x-1-1"}`): "unknown version",
		s.send(t, `{"v":1,"kind":"explode","instance":"runfleet-x-1-1"}`): "unknown kind",
	}
	good := s.queue(t, intake, 7000000401, "x64")

	records, resp := s.poll(t, worker, 5*time.Second)
	if len(records) != 4 {
		t.Fatalf("batch of %d records, want 4", len(records))
	}
	if len(resp.BatchItemFailures) != 0 {
		t.Fatalf("batch item failures %v, want none: a malformed message must never be retried", resp.BatchItemFailures)
	}
	if got := s.instance(t, good).Status; got != runner.StatusRunning {
		t.Fatalf("good record's instance: %s, want running", got)
	}
	for id, what := range bad {
		lines := s.logs.Lines(t, map[string]any{"level": "ERROR", "message_id": id})
		if len(lines) == 0 || !strings.Contains(lines[0]["error"].(string), "malformed") {
			t.Errorf("%s message %s: no error-level log line naming it malformed: %v", what, id, lines)
		}
	}
	if visible, inFlight, delayed := s.queueDepth(t); visible+inFlight+delayed != 0 {
		t.Fatalf("queue holds %d/%d/%d messages, want none: malformed ones are acknowledged", visible, inFlight, delayed)
	}
}

// A record whose provider call hangs is cut off shortly before the
// function's own timeout — its half-made machine deleted by name and the
// create re-sent through the queue — so the batch-mate that finished is not
// redelivered with it, as a function timeout would do.
func TestHungRecordIsReportedBeforeTheFunctionTimesOut(t *testing.T) {
	s := newStack(t, stackOptions{config: twoPoolConfig})
	s.simulated("arm64").SetFaults(simulated.Faults{HangCreates: true})
	intake, worker := s.webhook(), s.worker()
	done := s.queue(t, intake, 7000001101, "x64")
	hung := s.queue(t, intake, 7000001102, "arm64")

	out, err := s.sqs.ReceiveMessage(context.Background(), &sqsapi.ReceiveMessageInput{
		QueueUrl: aws.String(s.env.QueueURL), MaxNumberOfMessages: 10, WaitTimeSeconds: 5,
		MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameAll},
	})
	if err != nil || len(out.Messages) != 2 {
		t.Fatalf("ReceiveMessage: %d messages, %v; want both", len(out.Messages), err)
	}
	event := s.sqsEvent(t, out.Messages)
	// Lambda's context carries the function's deadline.
	ctx, _ := s.invocation()
	ctx, cancel := context.WithTimeout(ctx, 7*time.Second)
	defer cancel()
	resp, err := worker(ctx, event)
	if err != nil {
		t.Fatal(err)
	}
	if ctx.Err() != nil {
		t.Fatal("the handler ran into the function timeout; it must return before it")
	}
	if got := failedInstances(t, event.Records, resp); len(got) != 0 && !slices.Equal(got, []string{hung}) {
		t.Fatalf("batch item failures for %v, want none or only the hung %s", got, hung)
	}
	if inst := s.instance(t, hung); inst.Status != runner.StatusPendingCreate || inst.ProviderFault == "" {
		t.Fatalf("hung %s: %s (fault %q), want pending_create with the fault recorded, its retry queued", hung, inst.Status, inst.ProviderFault)
	}
	if got := s.instance(t, done).Status; got != runner.StatusRunning {
		t.Fatalf("%s: %s, want running", done, got)
	}
}

// The worker's response is the documented shape, with an empty list (not
// null) when everything succeeded.
func TestWorkerResponseShape(t *testing.T) {
	s := newStack(t, stackOptions{})
	worker := s.worker()
	ctx, _ := s.invocation()
	resp, err := worker(ctx, events.SQSEvent{})
	if err != nil {
		t.Fatal(err)
	}
	if resp.BatchItemFailures == nil || len(resp.BatchItemFailures) != 0 {
		t.Fatalf("empty batch → %#v, want an empty failure list", resp)
	}
}

// queue delivers a queued webhook for a job with the given architecture
// label and returns its instance name.
func (s *stack) queue(t testing.TB, intake lambdafn.FunctionURLHandler, jobID int64, arch string) string {
	t.Helper()
	var payload map[string]any
	mustUnmarshal(t, jobPayload(t, runner.ActionQueued, jobID, ""), &payload)
	payload["workflow_job"].(map[string]any)["labels"] = []string{"self-hosted", "linux", arch}
	body := mustMarshal(t, payload)
	status, reply := s.deliver(t, intake, functionURLEvent(t, body))
	if status != http.StatusOK || reply.Outcome == nil || reply.Instance == "" {
		t.Fatalf("queued %d: %d %+v", jobID, status, reply)
	}
	return reply.Instance
}

// setVersionAttribute overwrites an instance item's version attribute, to
// make the item unreadable (a string) or readable again.
func (s *stack) setVersionAttribute(t testing.TB, name string, v ddbtypes.AttributeValue) {
	t.Helper()
	_, err := s.ddb.UpdateItem(context.Background(), &dynamodb.UpdateItemInput{
		TableName:                 aws.String(s.env.Table),
		Key:                       map[string]ddbtypes.AttributeValue{"pk": &ddbtypes.AttributeValueMemberS{Value: "INSTANCE#" + name}},
		UpdateExpression:          aws.String("SET #v = :v"),
		ExpressionAttributeNames:  map[string]string{"#v": "version"},
		ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{":v": v},
	})
	if err != nil {
		t.Fatal(err)
	}
}

func instancesOf(t testing.TB, records []events.SQSMessage) []string {
	t.Helper()
	var out []string
	for _, r := range records {
		msg, err := engine.DecodeMessage([]byte(r.Body))
		if err != nil {
			t.Fatalf("record %s: %v", r.MessageId, err)
		}
		out = append(out, msg.Instance)
	}
	return out
}

func failedInstances(t testing.TB, records []events.SQSMessage, resp events.SQSEventResponse) []string {
	t.Helper()
	var out []string
	for _, f := range resp.BatchItemFailures {
		i := slices.IndexFunc(records, func(r events.SQSMessage) bool { return r.MessageId == f.ItemIdentifier })
		if i < 0 {
			t.Fatalf("batch item failure %q names no record of the batch", f.ItemIdentifier)
		}
		out = append(out, instancesOf(t, records[i:i+1])...)
	}
	return out
}

func messageIDOf(records []events.SQSMessage, instance string) string {
	for _, r := range records {
		if strings.Contains(r.Body, `"instance":"`+instance+`"`) {
			return r.MessageId
		}
	}
	return ""
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}
