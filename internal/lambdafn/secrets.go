package lambdafn

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
)

// The variable names a config in SSM uses for its secrets, exactly as in
// embedded mode (`webhook: {secret_env: RUNFLEET_WEBHOOK_SECRET}`). On Lambda
// they are not environment variables: config.Parse's lookupEnv is answered
// from Secrets Manager, so secrets never sit in a function's configuration.
const (
	SecretWebhook          = "RUNFLEET_WEBHOOK_SECRET"     // from RUNFLEET_WEBHOOK_SECRET_ARN
	SecretGitHubPrivateKey = "RUNFLEET_GITHUB_PRIVATE_KEY" // from RUNFLEET_GITHUB_SECRET_ARN
	SecretGitHubToken      = "RUNFLEET_GITHUB_TOKEN"       // from RUNFLEET_GITHUB_SECRET_ARN
	// SecretGitHubExtraAppKey, followed by n (from 1), is the n-th extra
	// App's private key, from the n-th of RUNFLEET_GITHUB_EXTRA_SECRET_ARNS.
	SecretGitHubExtraAppKey = "RUNFLEET_GITHUB_EXTRA_APP_KEY_"
)

// SecretReader is the Secrets Manager call the functions make.
type SecretReader interface {
	GetSecretValue(ctx context.Context, in *secretsmanager.GetSecretValueInput, opts ...func(*secretsmanager.Options)) (*secretsmanager.GetSecretValueOutput, error)
}

// standIn answers config.Parse for a secret this function has no use for, so
// one config serves all six functions without each being granted every
// secret. It is a well-formed PEM block (a private key field is checked for
// PEM), and it is cleared from the parsed config before anything can use it.
const standIn = "-----BEGIN RUNFLEET UNUSED SECRET-----\n-----END RUNFLEET UNUSED SECRET-----\n"

// secretLookup answers config.Parse's lookupEnv for one function. lookupEnv
// cannot return an error, so a failed fetch is kept and reported after Parse
// instead of Parse's vaguer "not set".
type secretLookup struct {
	ctx    context.Context
	client SecretReader
	role   Role
	env    Env

	fetchErr error
	unknown  []string
}

func (s *secretLookup) lookup(name string) (string, bool) {
	var arn string
	var used bool
	switch name {
	case SecretWebhook:
		arn, used = s.env.WebhookSecretARN, s.role.usesWebhookSecret()
	case SecretGitHubPrivateKey, SecretGitHubToken:
		arn, used = s.env.GitHubSecretARN, s.role.usesGitHub()
	default:
		n, ok := extraAppKey(name)
		if !ok {
			s.unknown = append(s.unknown, name)
			return "", false
		}
		used = s.role.usesGitHub()
		if n <= len(s.env.GitHubExtraSecretARNs) {
			arn = s.env.GitHubExtraSecretARNs[n-1]
		}
	}
	if !used {
		return standIn, true
	}
	if arn == "" {
		return "", false
	}
	value, err := s.fetch(arn)
	if err != nil {
		s.fetchErr = errors.Join(s.fetchErr, fmt.Errorf("read %s from secret %s: %w", name, arn, err))
		return "", false
	}
	return value, true
}

func (s *secretLookup) fetch(arn string) (string, error) {
	out, err := s.client.GetSecretValue(s.ctx, &secretsmanager.GetSecretValueInput{SecretId: aws.String(arn)})
	if err != nil {
		return "", err
	}
	if out.SecretString != nil {
		return *out.SecretString, nil
	}
	return string(out.SecretBinary), nil
}

// hint explains, after a failed Parse, how secrets work on Lambda.
func (s *secretLookup) hint() string {
	msg := fmt.Sprintf("on Lambda, secret_env names are answered from Secrets Manager: %s from %s, %s and %s from %s, %s<n> from the n-th of %s; secret files cannot be read",
		SecretWebhook, EnvWebhookSecretARN, SecretGitHubPrivateKey, SecretGitHubToken, EnvGitHubSecretARN, SecretGitHubExtraAppKey, EnvGitHubExtraSecretARNs)
	if len(s.unknown) > 0 {
		slices.Sort(s.unknown)
		msg += fmt.Sprintf("; %v are not among them (server.* settings are for embedded mode only)", slices.Compact(s.unknown))
	}
	return msg
}

// errNoFilesOnLambda answers config.Parse's readFile: a function's file
// system holds only its code.
func errNoFilesOnLambda(path string) ([]byte, error) {
	return nil, fmt.Errorf("secret files are not available on Lambda (%s); use secret_env with a name answered from Secrets Manager", path)
}

// extraAppKey reads n from RUNFLEET_GITHUB_EXTRA_APP_KEY_<n>.
func extraAppKey(name string) (int, bool) {
	digits, ok := strings.CutPrefix(name, SecretGitHubExtraAppKey)
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(digits)
	return n, err == nil && n >= 1
}
