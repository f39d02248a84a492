package kubernetes_test

import (
	"context"
	"fmt"

	"github.com/runfleet/runfleet/providers"
	"github.com/runfleet/runfleet/providers/kubernetes"
)

// providerRoundTrip makes a runner pod, finds it, lists and deletes it.
func providerRoundTrip(ctx context.Context, p *kubernetes.Provider) error {
	req := providers.CreateRequest{
		Name: "runfleet-linux-1-1", Pool: "linux", PoolID: "pool",
		MetadataURL: "http://runfleet:8080/metadata/runfleet-linux-1-1", InstanceToken: "t",
	}
	in, err := p.CreateInstance(ctx, req)
	if err != nil {
		return fmt.Errorf("create: %w", err)
	}
	if _, err := p.GetInstance(ctx, in.ProviderID); err != nil {
		return fmt.Errorf("get: %w", err)
	}
	list, err := p.ListInstances(ctx, "pool")
	if err != nil || len(list) != 1 {
		return fmt.Errorf("list: %v, %w", list, err)
	}
	if err := p.DeleteInstance(ctx, in.Name); err != nil {
		return fmt.Errorf("delete: %w", err)
	}
	if err := p.RemoveAllInstances(ctx); err != nil {
		return fmt.Errorf("remove all: %w", err)
	}
	return nil
}

// testAppKey is a throwaway RSA key, only for loading the example config.
const testAppKey = "-----BEGIN RSA PRIVATE KEY-----\nTUlJQm9nSUJBQUpCQUxzaW11bGF0ZWQ=\n-----END RSA PRIVATE KEY-----\n"
