package sqs_test

import (
	"context"
	"encoding/json"
	"strconv"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	sqsapi "github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/runfleet/runfleet/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// createQueue makes a fresh queue on the test SQS server and, when
// maxReceives > 0, a dead-letter queue it redrives to after that many
// receives, the way template.yaml sets them up.
func createQueue(t *testing.T, client *sqsapi.Client, maxReceives int) (queueURL, dlqURL string) {
	t.Helper()
	ctx := context.Background()
	name := testenv.UniqueName(t, "q")
	attrs := map[string]string{}
	if maxReceives > 0 {
		dlqURL = mustCreate(t, client, name+"-dlq", nil)
		got, err := client.GetQueueAttributes(ctx, &sqsapi.GetQueueAttributesInput{
			QueueUrl:       aws.String(dlqURL),
			AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameQueueArn},
		})
		if err != nil {
			t.Fatalf("GetQueueAttributes(dlq): %v", err)
		}
		policy, err := json.Marshal(map[string]string{
			"deadLetterTargetArn": got.Attributes[string(types.QueueAttributeNameQueueArn)],
			"maxReceiveCount":     strconv.Itoa(maxReceives),
		})
		if err != nil {
			t.Fatal(err)
		}
		attrs[string(types.QueueAttributeNameRedrivePolicy)] = string(policy)
	}
	return mustCreate(t, client, name, attrs), dlqURL
}

func mustCreate(t *testing.T, client *sqsapi.Client, name string, attrs map[string]string) string {
	t.Helper()
	out, err := client.CreateQueue(context.Background(), &sqsapi.CreateQueueInput{QueueName: aws.String(name), Attributes: attrs})
	if err != nil {
		t.Fatalf("CreateQueue(%s): %v", name, err)
	}
	t.Cleanup(func() {
		_, _ = client.DeleteQueue(context.Background(), &sqsapi.DeleteQueueInput{QueueUrl: out.QueueUrl})
	})
	return aws.ToString(out.QueueUrl)
}
