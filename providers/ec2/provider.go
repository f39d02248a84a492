package ec2

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	awsec2 "github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/pricing"
	"github.com/aws/aws-sdk-go-v2/service/ssm"

	"github.com/runfleet/runfleet/providers"
)

// Provider launches and removes one pool's runner machines on EC2. It is
// safe for concurrent use.
type Provider struct {
	client       *awsec2.Client
	controllerID string
	poolID       string
	settings     Settings
	// userData is the custom user data template; nil = the defaults.
	userData *userDataTemplate
	// rootDevices caches each AMI's root device name (AMIs are immutable).
	rootDevices sync.Map
	// types caches instance type facts for shaped creates (shape.go).
	types *typeCatalog
	// ssm resolves a resolve:ssm image to compare warm machines with.
	ssm *ssm.Client
	// pricing reads on-demand prices (ondemand.go) for region, the
	// provider's.
	pricing productLister
	region  string
	log     *slog.Logger
	// onFailover, when set, hears each capacity failover (WithFailoverHook).
	onFailover  func(pool, reason string)
	claimSettle time.Duration
}

var _ providers.Provider = (*Provider)(nil)

// Ownership is what marks a machine as this provider's, as tags: the
// controller and the provider-side id of the one pool it serves
// (runner.PoolID: unique per runfleet installation and pool, so two
// installations with a pool of one name on one account never touch each
// other's machines).
type Ownership struct {
	ControllerID string
	PoolID       string
}

// New builds the provider with the AWS configuration of the environment
// (config.LoadDefaultConfig: credentials, region, and endpoint overrides
// such as AWS_ENDPOINT_URL_EC2). settings.Region, when set, wins over the
// environment's region.
func New(ctx context.Context, owner Ownership, settings Settings, opts ...Option) (*Provider, error) {
	var load []func(*awsconfig.LoadOptions) error
	if settings.Region != "" {
		load = append(load, awsconfig.WithRegion(settings.Region))
	}
	cfg, err := awsconfig.LoadDefaultConfig(ctx, load...)
	if err != nil {
		return nil, fmt.Errorf("ec2 provider: load AWS configuration: %w", err)
	}
	return NewWithConfig(cfg, owner, settings, opts...)
}

// NewWithConfig builds the provider on an AWS configuration the caller
// made (tests point it at a local server and add middleware to it).
// settings.Region, when set, wins over cfg.Region.
func NewWithConfig(cfg aws.Config, owner Ownership, settings Settings, opts ...Option) (*Provider, error) {
	if owner.ControllerID == "" {
		return nil, errors.New("ec2 provider: a controller id is required (it tags every machine)")
	}
	if owner.PoolID == "" {
		return nil, errors.New("ec2 provider: the pool's provider-side id is required (it tags every machine)")
	}
	if err := settings.Validate(); err != nil {
		return nil, err
	}
	tmpl, err := parseUserDataTemplate(settings.UserDataTemplate)
	if err != nil {
		return nil, settingError(keyUserDataTemplate, "%v", err)
	}
	if settings.Region != "" {
		cfg.Region = settings.Region
	}
	if cfg.Region == "" {
		return nil, settingError(keyRegion, "not set, and the environment names no region (AWS_REGION)")
	}
	p := &Provider{
		client:       awsec2.NewFromConfig(cfg),
		ssm:          ssm.NewFromConfig(cfg),
		pricing:      pricing.NewFromConfig(cfg, func(o *pricing.Options) { o.Region = pricingRegion }),
		region:       cfg.Region,
		controllerID: owner.ControllerID,
		poolID:       owner.PoolID,
		settings:     settings,
		userData:     tmpl,
		types:        newTypeCatalog(),
		log:          slog.Default(),
		claimSettle:  defaultClaimSettle,
	}
	for _, opt := range opts {
		opt(p)
	}
	return p, nil
}

// opRefillWarm names a warm-pool refill in *providers.Error: runfleet's
// operation, not GARM's (providers.WarmPool); GARM's are providers.Op*.
const opRefillWarm = "RefillWarm"
