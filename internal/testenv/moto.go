package testenv

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
)

const (
	sqsEndpointEnv     = "AWS_ENDPOINT_URL_SQS"
	genericEndpointEnv = "AWS_ENDPOINT_URL"
)

var (
	motoOnce   sync.Once
	motoServer *server
	motoErr    error
)

// MotoEndpoint returns the URL of the moto server for this test process
// (AWS_ENDPOINT_URL if set), starting one on first use. It fails the test if
// the server cannot start.
func MotoEndpoint(t testing.TB) string {
	t.Helper()
	if endpoint := os.Getenv(genericEndpointEnv); endpoint != "" {
		return endpoint
	}
	motoOnce.Do(func() {
		motoServer, motoErr = startServer(serverSpec{name: "moto server", command: motoCommand})
	})
	if motoErr != nil {
		t.Fatal(motoErr)
	}
	return motoServer.endpoint
}

// SQSEndpoint returns AWS_ENDPOINT_URL_SQS if set, else the moto server's URL.
func SQSEndpoint(t testing.TB) string {
	t.Helper()
	if endpoint := os.Getenv(sqsEndpointEnv); endpoint != "" {
		return endpoint
	}
	return MotoEndpoint(t)
}

// AWSConfig is an aws.Config whose every service is aimed at the moto server:
// build EC2, SSM, Secrets Manager... clients from it. Moto's state is global
// to the server and shared by the whole process: name resources with
// UniqueName or tag them per test, and never reset it.
func AWSConfig(t testing.TB) aws.Config {
	t.Helper()
	return staticConfig(MotoEndpoint(t))
}

// SQS returns a client of the test SQS server (moto unless
// AWS_ENDPOINT_URL_SQS says otherwise). Name queues with UniqueName.
func SQS(t testing.TB) *sqs.Client {
	t.Helper()
	return sqs.NewFromConfig(staticConfig(SQSEndpoint(t)))
}

func motoCommand(port int) (*exec.Cmd, error) {
	python, err := exec.LookPath("python3")
	if err != nil {
		return nil, fmt.Errorf("testenv: the moto server needs python3 on PATH: %w", err)
	}
	return exec.Command(python, "-m", "moto.server", "-H", "127.0.0.1", "-p", strconv.Itoa(port)), nil
}
