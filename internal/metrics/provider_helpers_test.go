package metrics_test

import (
	"context"

	"github.com/runfleet/runfleet/providers"
)

// providerForTest answers by the instance name: "gone" is not found,
// "fails" fails, "error-status" is a create that returned a machine in
// error.
type providerForTest struct{}

func (providerForTest) CreateInstance(_ context.Context, req providers.CreateRequest) (providers.Instance, error) {
	if req.Name == "error-status" {
		return providers.Instance{Name: req.Name, Status: providers.StatusError, Fault: "quota"}, nil
	}
	return providers.Instance{Name: req.Name, Status: providers.StatusRunning}, nil
}

func (providerForTest) DeleteInstance(_ context.Context, name string) error {
	switch name {
	case "gone":
		return providers.ErrNotFound
	case "fails":
		return errFails
	}
	return nil
}

func (providerForTest) GetInstance(_ context.Context, name string) (providers.Instance, error) {
	return providers.Instance{Name: name}, nil
}

func (providerForTest) ListInstances(context.Context, string) ([]providers.Instance, error) {
	return nil, nil
}

func (providerForTest) RemoveAllInstances(context.Context) error    { return nil }
func (providerForTest) StartInstance(context.Context, string) error { return nil }
func (providerForTest) StopInstance(context.Context, string) error  { return nil }

func createRequest(name string) providers.CreateRequest { return providers.CreateRequest{Name: name} }
