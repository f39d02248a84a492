package testenv

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
)

const (
	// Region is the region every test client and test server uses.
	Region = "us-east-1"
	// Static credentials: the local servers accept anything, and fixed values
	// guarantee a test never signs a request with a developer's real keys.
	accessKeyID     = "testing"
	secretAccessKey = "testing"
)

func staticConfig(endpoint string) aws.Config {
	return aws.Config{
		Region:       Region,
		Credentials:  credentials.NewStaticCredentialsProvider(accessKeyID, secretAccessKey, ""),
		BaseEndpoint: aws.String(endpoint),
	}
}

// SetEnv points code that builds its own clients with
// config.LoadDefaultConfig (Lambda handlers, the CLI) at the test servers,
// for the duration of the test: region, static credentials, and the
// AWS_ENDPOINT_URL variables for moto, SQS and DynamoDB. It starts both
// servers. Like t.Setenv, it cannot be used in parallel tests.
func SetEnv(t testing.TB) {
	t.Helper()
	moto, sqsURL, dynamo := MotoEndpoint(t), SQSEndpoint(t), DynamoDBEndpoint(t)
	for name, value := range map[string]string{
		"AWS_REGION":                Region,
		"AWS_ACCESS_KEY_ID":         accessKeyID,
		"AWS_SECRET_ACCESS_KEY":     secretAccessKey,
		"AWS_SESSION_TOKEN":         "",
		"AWS_PROFILE":               "",
		"AWS_EC2_METADATA_DISABLED": "true",
		genericEndpointEnv:          moto,
		sqsEndpointEnv:              sqsURL,
		dynamoDBEndpointEnv:         dynamo,
	} {
		t.Setenv(name, value)
	}
}
