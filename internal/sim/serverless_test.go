package sim

import (
	"context"
	"encoding/json"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	sqsapi "github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/runfleet/runfleet/internal/queue/sqs"
	"github.com/runfleet/runfleet/internal/store/dynamodb"
	"github.com/runfleet/runfleet/internal/store/postgres/pgtest"
	"github.com/runfleet/runfleet/internal/testclock"
	"github.com/runfleet/runfleet/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m, pgtest.Stop) }

// serverlessBackend is the serverless mode's state: a DynamoDB table and an
// SQS queue with its dead-letter queue (DynamoDB Local and moto). Nothing
// is reopened at a restart: the services keep the state, a new process
// only gets new clients. SQS's delays and visibility timeouts pass in real
// time.
type serverlessBackend struct {
	store *dynamodb.Store
	queue *sqs.Queue
}

func (b serverlessBackend) Open(*testclock.Clock) (State, error) {
	return State{Store: b.store, Queue: b.queue, Close: func() error { return nil }}, nil
}

func (serverlessBackend) RealTime() bool { return true }

func newServerlessBackend(t *testing.T) serverlessBackend {
	t.Helper()
	ctx := context.Background()
	client := testenv.DynamoDB(t)
	table := testenv.UniqueName(t, "sim")
	if err := dynamodb.CreateTable(ctx, client, table); err != nil {
		t.Fatal(err)
	}
	sqsClient := testenv.SQS(t)
	name := testenv.UniqueName(t, "sim")
	dlq := createSQSQueue(t, sqsClient, name+"-dlq", nil)
	arn, err := sqsClient.GetQueueAttributes(ctx, &sqsapi.GetQueueAttributesInput{
		QueueUrl:       aws.String(dlq),
		AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameQueueArn},
	})
	if err != nil {
		t.Fatal(err)
	}
	policy, err := json.Marshal(map[string]string{
		"deadLetterTargetArn": arn.Attributes[string(sqstypes.QueueAttributeNameQueueArn)],
		"maxReceiveCount":     strconv.Itoa(MaxReceives),
	})
	if err != nil {
		t.Fatal(err)
	}
	url := createSQSQueue(t, sqsClient, name, map[string]string{string(sqstypes.QueueAttributeNameRedrivePolicy): string(policy)})
	return serverlessBackend{store: dynamodb.New(client, table), queue: sqs.New(sqsClient, url, sqs.WithDeadLetterQueue(dlq))}
}

func createSQSQueue(t *testing.T, client *sqsapi.Client, name string, attrs map[string]string) string {
	t.Helper()
	out, err := client.CreateQueue(context.Background(), &sqsapi.CreateQueueInput{QueueName: aws.String(name), Attributes: attrs})
	if err != nil {
		t.Fatalf("create queue %s: %v", name, err)
	}
	t.Cleanup(func() {
		_, _ = client.DeleteQueue(context.Background(), &sqsapi.DeleteQueueInput{QueueUrl: out.QueueUrl})
	})
	return aws.ToString(out.QueueUrl)
}

// TestSimulationServerless runs the same simulation over the serverless
// adapters — the DynamoDB store (no outbox: an admission and its create
// message are two writes, with a crash point between them) and the SQS
// queue — with fewer jobs and room in the pools, since SQS's visibility
// timeouts pass in real time. It is not replayable to the step: SQS
// decides delivery order and message ids.
func TestSimulationServerless(t *testing.T) {
	jobs, seed := 15, uint64(1)
	if testing.Short() {
		jobs = 8
	}
	{
		cfg := seedConfig(seed, jobs)
		cfg.Roomy, cfg.LongTail = true, false
		// Every store call is a round trip: fewer, longer reconcile
		// intervals keep the run short; the quiet phase still spans 30
		// passes, three bootstrap timeouts.
		cfg.ReconcileInterval, cfg.Quiescence = time.Minute, 30*time.Minute
		started := time.Now()
		r := Run(cfg, newServerlessBackend(t), NewEngine)
		t.Logf("seed %d on DynamoDB Local + moto SQS: %d job lifecycles over %s virtual in %s real\n%s",
			seed, r.Lifecycles, r.Virtual.Round(time.Second), time.Since(started).Round(time.Millisecond), r.Stats)
		if r.Failed() {
			t.Error(failureReportWith(r, "go test ./internal/sim -run TestSimulationServerless (SQS decides delivery order: the run is not replayable to the step; the bolt run of the same seed is)"))
		}
	}
}
