package lambdafn

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/aws/aws-lambda-go/lambdacontext"
	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	sqsapi "github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/ssm"

	"github.com/runfleet/runfleet/internal/config"
	"github.com/runfleet/runfleet/internal/metadata"
	"github.com/runfleet/runfleet/internal/metrics"
	"github.com/runfleet/runfleet/internal/queue/sqs"
	dynamostore "github.com/runfleet/runfleet/internal/store/dynamodb"
	"github.com/runfleet/runfleet/internal/telemetry"
)

// Options are what a function is built from.
type Options struct {
	Env Env
	// AWS is what every client is built from: config.LoadDefaultConfig on
	// Lambda, which honours AWS_ENDPOINT_URL_* (how tests reach emulators).
	AWS aws.Config
	// Logger defaults to JSON lines on stdout at Env.LogLevel.
	Logger *slog.Logger
	// DynamoDBOptions adjust the DynamoDB client (tests against DynamoDB
	// Local turn off response checksum validation).
	DynamoDBOptions []func(*dynamodb.Options)
	// Metrics receives the CloudWatch EMF lines (default: stdout, where
	// Lambda's logs go).
	Metrics io.Writer
}

// OptionsFunc returns a function's Options when it starts; FromEnvironment
// is the deployed one, tests give their own.
type OptionsFunc func(ctx context.Context) (Options, error)

// FromEnvironment reads a deployed function's Options: the process
// environment, the default AWS credential chain, JSON logs on stdout (also
// made slog's default, so adapters that log through it match).
func FromEnvironment(role Role) OptionsFunc {
	return func(ctx context.Context) (Options, error) {
		env, err := ReadEnv(role, os.LookupEnv)
		if err != nil {
			return Options{}, err
		}
		awsCfg, err := awsconfig.LoadDefaultConfig(ctx)
		if err != nil {
			return Options{}, fmt.Errorf("lambdafn: AWS configuration: %w", err)
		}
		log := telemetry.NewLogger(os.Stdout, env.LogLevel)
		slog.SetDefault(log)
		return Options{Env: env, AWS: awsCfg, Logger: log}, nil
	}
}

// App is what every function builds once per execution environment: the
// config (with the secrets its role uses), the DynamoDB store and the SQS
// queue. Each function adds what it alone needs (webhook.go, metadata.go,
// package work).
type App struct {
	Role   Role
	Env    Env
	Config *config.Config
	Store  *dynamostore.Store
	Queue  *sqs.Queue
	Logger *slog.Logger
	// Tokens and MetadataURL are runner bootstrap's (bootstrap.go): the
	// metadata function verifies with Tokens; a worker with both mints
	// tokens and hands providers the metadata URLs.
	Tokens      *metadata.Tokens
	MetadataURL string
	// tokenKey is the instance token key Tokens verifies with; the
	// metadata function's cache derives its own tokens' keys from it.
	tokenKey []byte
	// Metrics records the vocabulary (internal/metrics) as EMF; each
	// handler flushes it at the end of its invocation (FlushMetrics).
	Metrics *metrics.EMF
}

// Load reads the config and the secrets role uses and builds the store and
// the queue. Every problem it can see up front is reported here, at the
// first invocation, rather than halfway through some job.
func Load(ctx context.Context, role Role, opts Options) (*App, error) {
	if !role.valid() {
		return nil, fmt.Errorf("lambdafn: unknown role %q", role)
	}
	log := opts.Logger
	if log == nil {
		log = telemetry.NewLogger(os.Stdout, opts.Env.LogLevel)
	}
	log = log.With("function", string(role))

	secrets := secretsmanager.NewFromConfig(opts.AWS)
	cfg, err := LoadConfig(ctx, role, opts.Env, ssm.NewFromConfig(opts.AWS), secrets)
	if err != nil {
		return nil, err
	}
	if err := checkControllerID(opts.Env, cfg.ControllerID); err != nil {
		return nil, err
	}
	log = log.With("controller_id", cfg.ControllerID)
	out := opts.Metrics
	if out == nil {
		out = os.Stdout
	}
	app := &App{
		Role:    role,
		Env:     opts.Env,
		Config:  cfg,
		Store:   dynamostore.New(dynamodb.NewFromConfig(opts.AWS, opts.DynamoDBOptions...), opts.Env.Table),
		Queue:   NewQueue(opts, log),
		Logger:  log,
		Metrics: metrics.NewEMF(out, cfg.ControllerID),
	}
	if err := app.loadBootstrap(ctx, opts.Env, secrets); err != nil {
		return nil, err
	}
	return app, nil
}

// NewQueue is the work queue the environment names. It needs neither the
// config nor a secret, so a worker that cannot load its config still has it
// to schedule its batch's retry.
func NewQueue(opts Options, log *slog.Logger) *sqs.Queue {
	return sqs.New(sqsapi.NewFromConfig(opts.AWS), opts.Env.QueueURL, sqs.WithLogger(log))
}

// FlushMetrics writes the invocation's metrics. A failed write is logged,
// never returned: metrics must not fail the work.
func (a *App) FlushMetrics(ctx context.Context, log *slog.Logger) {
	if err := a.Metrics.Flush(); err != nil {
		log.WarnContext(ctx, "metrics could not be written", "error", err)
	}
}

// InvocationLogger is the App's logger with the Lambda request id, which
// ties every line of one invocation together in CloudWatch.
func (a *App) InvocationLogger(ctx context.Context) *slog.Logger {
	return WithRequestID(ctx, a.Logger)
}

// WithRequestID adds the Lambda request id of ctx to log, when there is one.
func WithRequestID(ctx context.Context, log *slog.Logger) *slog.Logger {
	if lc, ok := lambdacontext.FromContext(ctx); ok && lc.AwsRequestID != "" {
		return log.With("aws_request_id", lc.AwsRequestID)
	}
	return log
}

// ControllerIDMismatchError is a config whose controller_id is not the
// stack's ControllerId parameter (EnvControllerID).
type ControllerIDMismatchError struct {
	Config, Stack string
}

func (e *ControllerIDMismatchError) Error() string {
	return fmt.Sprintf("lambdafn: the config's controller_id %q is not the stack's ControllerId parameter %q (%s): "+
		"the alarms and the dashboard read metrics under the parameter's value; set both to the same value", e.Config, e.Stack, EnvControllerID)
}

func checkControllerID(env Env, configured string) error {
	if env.ControllerID == "" || env.ControllerID == configured {
		return nil
	}
	return &ControllerIDMismatchError{Config: configured, Stack: env.ControllerID}
}
