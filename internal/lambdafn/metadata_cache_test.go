package lambdafn_test

import (
	"context"
	"errors"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"

	"github.com/runfleet/runfleet/internal/lambdafn"
	"github.com/runfleet/runfleet/internal/testenv"
)

// The metadata function serves the cache only from the stack's table and
// bucket: a config whose cache section the stack cannot serve stops the
// function at its first invocation, naming what to change, instead of
// answering every job's cache calls with errors.
func TestMetadataFunctionRefusesACacheTheStackCannotServe(t *testing.T) {
	const public = "server:\n  public_url: " + metadataFunctionURL + "\n"
	for _, c := range []struct {
		name, cache   string
		table, bucket string
		wantErr       bool
	}{
		{"the stack's bucket", "cache:\n  s3: {bucket: stack-cache}\n  pools: [linux-x64]\n", "cache-index", "stack-cache", false},
		{"cache off", "", "cache-index", "stack-cache", false},
		{"local disk", "cache:\n  dir: /var/lib/runfleet/cache\n", "cache-index", "stack-cache", true},
		{"no cache in the stack", "cache:\n  s3: {bucket: stack-cache}\n", "", "", true},
		{"another bucket", "cache:\n  s3: {bucket: my-other-bucket}\n", "cache-index", "stack-cache", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			config := testConfig
			if c.cache != "" {
				config += public + c.cache
			}
			s := newStack(t, stackOptions{config: config})
			key, err := secretsmanager.NewFromConfig(s.aws).CreateSecret(context.Background(), &secretsmanager.CreateSecretInput{
				Name: aws.String(testenv.UniqueName(t, "token-key")), SecretString: aws.String("lambda-test-instance-token-key-0123456789abcdef\n"),
			})
			if err != nil {
				t.Fatal(err)
			}
			t.Setenv(lambdafn.EnvInstanceTokenKeyARN, aws.ToString(key.ARN))
			t.Setenv(lambdafn.EnvCacheTable, c.table)
			t.Setenv(lambdafn.EnvCacheBucket, c.bucket)
			opts, err := s.options(lambdafn.RoleMetadata)
			if err != nil {
				t.Fatal(err)
			}
			_, err = lambdafn.BuildMetadata(context.Background(), opts)
			switch {
			case c.wantErr && !errors.Is(err, lambdafn.ErrCacheEnvironment):
				t.Fatalf("BuildMetadata = %v, want ErrCacheEnvironment", err)
			case !c.wantErr && err != nil:
				t.Fatalf("BuildMetadata = %v", err)
			}
		})
	}
}
