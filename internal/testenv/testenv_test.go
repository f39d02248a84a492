package testenv_test

import (
	"context"
	"errors"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	dynamodbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/runfleet/runfleet/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

func TestDynamoDBLocalAnswers(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	client := testenv.DynamoDB(t)
	table := testenv.UniqueName(t, "table")

	_, err := client.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName:            aws.String(table),
		BillingMode:          dynamodbtypes.BillingModePayPerRequest,
		AttributeDefinitions: []dynamodbtypes.AttributeDefinition{{AttributeName: aws.String("pk"), AttributeType: dynamodbtypes.ScalarAttributeTypeS}},
		KeySchema:            []dynamodbtypes.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: dynamodbtypes.KeyTypeHash}},
	})
	if err != nil {
		t.Fatalf("CreateTable: %v", err)
	}
	tables, err := client.ListTables(ctx, &dynamodb.ListTablesInput{})
	if err != nil {
		t.Fatalf("ListTables: %v", err)
	}
	if !slices.Contains(tables.TableNames, table) {
		t.Fatalf("ListTables = %v, want it to contain %q", tables.TableNames, table)
	}

	// A conditional-check failure must come back as the typed service error,
	// not as a response-checksum error.
	put := &dynamodb.PutItemInput{
		TableName:           aws.String(table),
		Item:                map[string]dynamodbtypes.AttributeValue{"pk": &dynamodbtypes.AttributeValueMemberS{Value: "a"}},
		ConditionExpression: aws.String("attribute_not_exists(pk)"),
	}
	if _, err := client.PutItem(ctx, put); err != nil {
		t.Fatalf("first PutItem: %v", err)
	}
	_, err = client.PutItem(ctx, put)
	var conditionFailed *dynamodbtypes.ConditionalCheckFailedException
	if !errors.As(err, &conditionFailed) {
		t.Fatalf("second PutItem error = %v, want ConditionalCheckFailedException", err)
	}
}

func TestMotoSQSAnswers(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	client := testenv.SQS(t)
	name := testenv.UniqueName(t, "queue")

	created, err := client.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(name)})
	if err != nil {
		t.Fatalf("CreateQueue: %v", err)
	}
	if _, err := client.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: created.QueueUrl, MessageBody: aws.String("hello")}); err != nil {
		t.Fatalf("SendMessage: %v", err)
	}
	got, err := client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: created.QueueUrl, WaitTimeSeconds: 1})
	if err != nil {
		t.Fatalf("ReceiveMessage: %v", err)
	}
	if len(got.Messages) != 1 || aws.ToString(got.Messages[0].Body) != "hello" {
		t.Fatalf("ReceiveMessage = %+v, want the one message sent", got.Messages)
	}
}

func TestUniqueNameIsValidAndUnique(t *testing.T) {
	t.Parallel()
	valid := regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)
	seen := map[string]bool{}
	for range 100 {
		name := testenv.UniqueName(t, "prefix/with spaces."+strings.Repeat("x", 100))
		if !valid.MatchString(name) {
			t.Fatalf("UniqueName = %q: not a valid short SQS/DynamoDB name", name)
		}
		if seen[name] {
			t.Fatalf("UniqueName returned %q twice", name)
		}
		seen[name] = true
	}
}
