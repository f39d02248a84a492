package testenv

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
)

const dynamoDBEndpointEnv = "AWS_ENDPOINT_URL_DYNAMODB"

var (
	dynamoDBOnce   sync.Once
	dynamoDBServer *server
	dynamoDBErr    error
)

// DynamoDBEndpoint returns the URL of the DynamoDB server for this test
// process, starting DynamoDB Local on first use. It fails the test if the
// server cannot start.
func DynamoDBEndpoint(t testing.TB) string {
	t.Helper()
	if endpoint := os.Getenv(dynamoDBEndpointEnv); endpoint != "" {
		return endpoint
	}
	dynamoDBOnce.Do(func() {
		dynamoDBServer, dynamoDBErr = startServer(serverSpec{name: "DynamoDB Local", command: dynamoDBLocalCommand})
	})
	if dynamoDBErr != nil {
		t.Fatal(dynamoDBErr)
	}
	return dynamoDBServer.endpoint
}

// DynamoDBConfig is an aws.Config aimed at the test DynamoDB server.
func DynamoDBConfig(t testing.TB) aws.Config {
	t.Helper()
	return staticConfig(DynamoDBEndpoint(t))
}

// DynamoDB returns a client of the test DynamoDB server. The server is shared
// by the whole process: name tables with UniqueName.
func DynamoDB(t testing.TB) *dynamodb.Client {
	t.Helper()
	return dynamodb.NewFromConfig(DynamoDBConfig(t), func(o *dynamodb.Options) {
		// DynamoDB Local's error responses carry a CRC32 that does not match
		// their body; validating it would turn every service error (such as
		// ConditionalCheckFailed) into a checksum error.
		o.DisableValidateResponseChecksum = true
	})
}

func dynamoDBLocalCommand(port int) (*exec.Cmd, error) {
	jar, err := dynamoDBLocalJar()
	if err != nil {
		return nil, err
	}
	java, err := exec.LookPath("java")
	if err != nil {
		return nil, fmt.Errorf("testenv: DynamoDB Local needs java (17+) on PATH: %w", err)
	}
	cmd := exec.Command(java,
		"-Djava.library.path=./DynamoDBLocal_lib",
		"-jar", filepath.Base(jar),
		"-inMemory", "-sharedDb", "-disableTelemetry",
		"-port", strconv.Itoa(port),
	)
	cmd.Dir = filepath.Dir(jar)
	return cmd, nil
}
