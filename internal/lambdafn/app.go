package lambdafn

import (
	"context"
	"errors"
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
	"github.com/runfleet/runfleet/internal/engine"
	"github.com/runfleet/runfleet/internal/github"
	"github.com/runfleet/runfleet/internal/metadata"
	"github.com/runfleet/runfleet/internal/queue/sqs"
	dynamostore "github.com/runfleet/runfleet/internal/store/dynamodb"
	"github.com/runfleet/runfleet/internal/telemetry"
	"github.com/runfleet/runfleet/internal/wiring"
	"github.com/runfleet/runfleet/providers"
)

// Options configure Build.
type Options struct {
	Role Role
	Env  Env
	// AWS is what every client is built from: config.LoadDefaultConfig on
	// Lambda, which honours AWS_ENDPOINT_URL_* (how tests reach emulators).
	AWS aws.Config
	// Logger defaults to JSON lines on stdout at Env.LogLevel.
	Logger *slog.Logger
	// DynamoDBOptions adjust the DynamoDB client (tests against DynamoDB
	// Local turn off response checksum validation).
	DynamoDBOptions []func(*dynamodb.Options)
	// GitHub and Providers, when set, are used instead of what the config
	// asks for: tests give several functions one simulated GitHub and one
	// set of simulated machines, as a real GitHub and cloud are shared.
	GitHub    github.GitHub
	Providers map[string]providers.Provider
	// Metrics receives the worker's and reconciler's CloudWatch EMF lines
	// (default: stdout, where Lambda's logs go).
	Metrics io.Writer
}

// App is one function's adapters, built once per execution environment.
// Its handlers make a fresh engine per invocation (a few allocations) so
// every line it logs names the Lambda request.
type App struct {
	Role      Role
	Config    *config.Config
	Store     *dynamostore.Store
	Queue     *sqs.Queue
	GitHub    github.GitHub
	Providers map[string]providers.Provider
	Logger    *slog.Logger
	// Tokens and MetadataURL are runner bootstrap's (bootstrap.go): the
	// metadata function verifies with Tokens; a worker with both mints
	// tokens and hands providers the metadata URLs.
	Tokens      *metadata.Tokens
	MetadataURL string

	// metricsOut is where EMF lines go (metrics.go).
	metricsOut io.Writer
}

// Build reads the config and secrets and builds role's adapters. Every
// problem it can see up front (config, providers, GitHub) is reported here,
// at the first invocation, rather than halfway through some job.
func Build(ctx context.Context, opts Options) (*App, error) {
	if !opts.Role.valid() {
		return nil, fmt.Errorf("lambdafn: unknown role %q", opts.Role)
	}
	log := opts.Logger
	if log == nil {
		log = telemetry.NewLogger(os.Stdout, opts.Env.LogLevel)
	}
	log = log.With("function", string(opts.Role))

	cfg, err := LoadConfig(ctx, opts.Role, opts.Env, ssm.NewFromConfig(opts.AWS), secretsmanager.NewFromConfig(opts.AWS))
	if err != nil {
		return nil, err
	}
	log = log.With("controller_id", cfg.ControllerID)

	provs, gh := opts.Providers, opts.GitHub
	var problems []error
	if provs == nil && !opts.Role.usesProviders() {
		provs = unusedProviders(cfg)
	}
	if provs == nil {
		provs, err = wiring.Providers(cfg)
		problems = append(problems, err)
	}
	if gh == nil && opts.Role.usesGitHub() {
		gh, err = wiring.GitHub(cfg, log)
		problems = append(problems, err)
	}
	if err := errors.Join(problems...); err != nil {
		return nil, fmt.Errorf("config parameter %s cannot run on Lambda:\n%w", opts.Env.ConfigParameter, err)
	}
	if gh == nil {
		// Intake never calls GitHub; the engine still wants a client.
		gh = unusedGitHub{}
	}

	app := &App{
		Role:      opts.Role,
		Config:    cfg,
		Store:     dynamostore.New(dynamodb.NewFromConfig(opts.AWS, opts.DynamoDBOptions...), opts.Env.Table),
		Queue:     sqs.New(sqsapi.NewFromConfig(opts.AWS), opts.Env.QueueURL, sqs.WithLogger(log)),
		GitHub:    gh,
		Providers: provs,
		Logger:    log,

		metricsOut: opts.Metrics,
	}
	if app.metricsOut == nil {
		app.metricsOut = os.Stdout
	}
	if err := app.loadBootstrap(ctx, opts.Env, secretsmanager.NewFromConfig(opts.AWS)); err != nil {
		return nil, err
	}
	if _, err := app.engine(log); err != nil {
		return nil, err
	}
	return app, nil
}

// FromEnvironment is how a deployed function builds its App: the process
// environment, the default AWS credential chain, JSON logs on stdout (also
// made slog's default, so adapters that log through it match).
func FromEnvironment(role Role) BuildFunc {
	return func(ctx context.Context) (*App, error) {
		env, err := ReadEnv(role, os.LookupEnv)
		if err != nil {
			return nil, err
		}
		awsCfg, err := awsconfig.LoadDefaultConfig(ctx)
		if err != nil {
			return nil, fmt.Errorf("lambdafn: AWS configuration: %w", err)
		}
		log := telemetry.NewLogger(os.Stdout, env.LogLevel)
		slog.SetDefault(log)
		return Build(ctx, Options{Role: role, Env: env, AWS: awsCfg, Logger: log})
	}
}

// engine makes the engine for one invocation, logging through log.
func (a *App) engine(log *slog.Logger) (*engine.Engine, error) {
	engOpts := wiring.EngineOptions(a.Config)
	engOpts.Store, engOpts.Queue, engOpts.GitHub, engOpts.Providers, engOpts.Logger = a.Store, a.Queue, a.GitHub, a.Providers, log
	eng, err := engine.New(a.bootstrapOptions(engOpts))
	if err != nil {
		return nil, fmt.Errorf("lambdafn: %w", err)
	}
	return eng, nil
}

// invocationLogger is the App's logger with the Lambda request id, which
// ties every line of one invocation together in CloudWatch.
func (a *App) invocationLogger(ctx context.Context) *slog.Logger {
	return withRequestID(ctx, a.Logger)
}

func withRequestID(ctx context.Context, log *slog.Logger) *slog.Logger {
	if lc, ok := lambdacontext.FromContext(ctx); ok && lc.AwsRequestID != "" {
		return log.With("aws_request_id", lc.AwsRequestID)
	}
	return log
}
