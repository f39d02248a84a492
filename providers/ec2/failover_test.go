package ec2_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/runfleet/runfleet/internal/testenv"
	"github.com/runfleet/runfleet/providers"
	"github.com/runfleet/runfleet/providers/ec2"
)

// capacityInjector is an HTTP transport in front of moto that answers
// RunInstances calls fail picks with EC2's own XML error response, as the
// real service sends it: moto always has capacity, so the SDK's error
// decoding and the provider's failover run exactly as against AWS.
type capacityInjector struct {
	base http.RoundTripper
	fail func(call launchAttempt) string

	mu    sync.Mutex
	calls []launchAttempt
}

func (c *capacityInjector) RoundTrip(req *http.Request) (*http.Response, error) {
	body, err := io.ReadAll(req.Body)
	if err != nil {
		return nil, err
	}
	req.Body = io.NopCloser(bytes.NewReader(body))
	form, err := url.ParseQuery(string(body))
	if err != nil || form.Get("Action") != "RunInstances" {
		return c.base.RoundTrip(req)
	}
	call := launchAttempt{
		Spot:         form.Get("InstanceMarketOptions.MarketType") == "spot",
		InstanceType: form.Get("InstanceType"),
		Subnet:       form.Get("SubnetId"),
	}
	c.mu.Lock()
	c.calls = append(c.calls, call)
	c.mu.Unlock()
	code := c.fail(call)
	if code == "" {
		return c.base.RoundTrip(req)
	}
	xml := fmt.Sprintf(`<?xml version="1.0" encoding="UTF-8"?>
<Response><Errors><Error><Code>%s</Code><Message>We currently do not have sufficient %s capacity in the Availability Zone you requested. (injected by the test)</Message></Error></Errors><RequestID>5a3c1e1c-0000-4000-8000-000000000000</RequestID></Response>`, code, call.InstanceType)
	status := http.StatusServiceUnavailable
	if !strings.HasPrefix(code, "Insufficient") {
		status = http.StatusBadRequest
	}
	return &http.Response{
		StatusCode: status,
		Status:     http.StatusText(status),
		Header:     http.Header{"Content-Type": []string{"text/xml;charset=UTF-8"}},
		Body:       io.NopCloser(strings.NewReader(xml)),
		Request:    req,
	}, nil
}

func (c *capacityInjector) launches() []launchAttempt {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.calls)
}

// failoverRecord is one call of the provider's failover hook.
type failoverRecord struct{ pool, reason string }

// injectedProvider builds pool's provider on moto behind inj, logging to
// logs and recording its failover hook calls.
func (w *world) injectedProvider(pool string, s ec2.Settings, inj *capacityInjector, logs *bytes.Buffer) (*ec2.Provider, func() []failoverRecord) {
	w.t.Helper()
	cfg := testenv.AWSConfig(w.t)
	inj.base = http.DefaultTransport
	cfg.HTTPClient = &http.Client{Transport: inj}
	// The SDK's standard retryer stays: the provider must keep it from
	// repeating a capacity error (sent as 503) for the same choice.
	var mu sync.Mutex
	var hooks []failoverRecord
	p, err := ec2.NewWithConfig(cfg, w.ownership(pool), s,
		ec2.WithLogger(slog.New(slog.NewJSONHandler(logs, nil))),
		ec2.WithFailoverHook(func(pool, reason string) {
			mu.Lock()
			defer mu.Unlock()
			hooks = append(hooks, failoverRecord{pool, reason})
		}))
	if err != nil {
		w.t.Fatalf("NewWithConfig: %v", err)
	}
	return p, func() []failoverRecord {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(hooks)
	}
}

func TestInsufficientCapacityInTheFirstAZIsServedInTheSecond(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	s := w.settings()
	req := w.request("ice")
	first := ""
	inj := &capacityInjector{fail: func(c launchAttempt) string {
		if first == "" || c.Subnet == first {
			first = c.Subnet
			return "InsufficientInstanceCapacity"
		}
		return ""
	}}
	var logs bytes.Buffer
	p, hooks := w.injectedProvider("ice", s, inj, &logs)

	inst, err := p.CreateInstance(context.Background(), req)
	if err != nil {
		t.Fatalf("CreateInstance: %v", err)
	}
	calls := inj.launches()
	if len(calls) != 2 || calls[0].Subnet == calls[1].Subnet || calls[0].InstanceType != calls[1].InstanceType {
		t.Fatalf("RunInstances calls = %+v, want the same type in the first subnet, then the second", calls)
	}
	live := w.live(req.Name)
	if len(live) != 1 || aws.ToString(live[0].InstanceId) != inst.ProviderID || aws.ToString(live[0].SubnetId) != calls[1].Subnet {
		t.Fatalf("live machines = %v, want %s in %s", ids(live), inst.ProviderID, calls[1].Subnet)
	}
	if got, want := hooks(), []failoverRecord{{"ice", "InsufficientInstanceCapacity"}}; !slices.Equal(got, want) {
		t.Errorf("failover hook calls = %v, want %v", got, want)
	}
	// The attempt is logged with everything an operator filters by.
	line := logLine(t, &logs, "failing over")
	for _, want := range []string{
		`"instance":"` + req.Name + `"`, `"pool":"ice"`, `"subnet":"` + first + `"`,
		`"instance_type":"t3.large"`, `"market":"on-demand"`, `"error_code":"InsufficientInstanceCapacity"`,
	} {
		if !strings.Contains(line, want) {
			t.Errorf("failover log line %s lacks %s", line, want)
		}
	}
}

func TestFailoverOrderIsSubnetsThenTypesThenOnDemand(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	s := w.settings()
	s.Spot = true
	s.InstanceTypes = []string{"c7i.large", "t3.large"}
	inj := &capacityInjector{fail: func(c launchAttempt) string {
		switch {
		case c.Spot && c.InstanceType == "c7i.large":
			return "InsufficientInstanceCapacity"
		case c.Spot:
			return "SpotMaxPriceTooLow"
		case c.InstanceType == "c7i.large":
			return "Unsupported"
		}
		return ""
	}}
	var logs bytes.Buffer
	p, hooks := w.injectedProvider("order", s, inj, &logs)
	req := w.request("order")

	if _, err := p.CreateInstance(context.Background(), req); err != nil {
		t.Fatalf("CreateInstance: %v", err)
	}
	calls := inj.launches()
	a, b := calls[0].Subnet, calls[1].Subnet
	want := []launchAttempt{
		{true, "c7i.large", a}, {true, "c7i.large", b}, {true, "t3.large", a}, {true, "t3.large", b},
		{false, "c7i.large", a}, {false, "c7i.large", b}, {false, "t3.large", a},
	}
	if !slices.Equal(calls, want) {
		t.Fatalf("RunInstances calls =\n%+v\nwant\n%+v", calls, want)
	}
	if live := w.live(req.Name); len(live) != 1 || live[0].InstanceType != "t3.large" || live[0].InstanceLifecycle == ec2types.InstanceLifecycleTypeSpot {
		t.Fatalf("want one on-demand t3.large, got %v", ids(live))
	}
	if n := len(hooks()); n != 6 {
		t.Errorf("failover hook called %d times, want 6 (one per failed choice that had a next)", n)
	}
}

func TestSpotLimitSkipsTheRestOfSpotStraightToOnDemand(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	s := w.settings()
	s.Spot = true
	s.InstanceTypes = []string{"c7i.large", "t3.large"}
	inj := &capacityInjector{fail: func(c launchAttempt) string {
		if c.Spot {
			return "MaxSpotInstanceCountExceeded"
		}
		return ""
	}}
	var logs bytes.Buffer
	p, _ := w.injectedProvider("spotlimit", s, inj, &logs)

	if _, err := p.CreateInstance(context.Background(), w.request("spotlimit")); err != nil {
		t.Fatalf("CreateInstance: %v", err)
	}
	calls := inj.launches()
	if len(calls) != 2 || !calls[0].Spot || calls[1].Spot || calls[1].InstanceType != "c7i.large" {
		t.Fatalf("RunInstances calls = %+v, want one spot attempt, then the first on-demand choice", calls)
	}
}

func TestNonCapacityErrorStopsAtOnceWithATypedError(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	s := w.settings()
	s.Spot = true
	s.InstanceTypes = []string{"c7i.large", "t3.large"}
	inj := &capacityInjector{fail: func(launchAttempt) string { return "InvalidParameterValue" }}
	var logs bytes.Buffer
	p, hooks := w.injectedProvider("badparam", s, inj, &logs)
	req := w.request("badparam")

	_, err := p.CreateInstance(context.Background(), req)
	var refused *ec2.LaunchRefusedError
	if !errors.As(err, &refused) {
		t.Fatalf("CreateInstance = %v, want a *ec2.LaunchRefusedError", err)
	}
	if refused.Attempt.Market != "spot" || refused.Attempt.InstanceType != "c7i.large" {
		t.Errorf("refused attempt = %+v, want the first choice", refused.Attempt)
	}
	var pe *providers.Error
	if !errors.As(err, &pe) || !strings.Contains(pe.Fault, "InvalidParameterValue") {
		t.Errorf("fault %v lacks the EC2 code", err)
	}
	if errors.Is(err, ec2.ErrNoCapacity) {
		t.Error("a bad parameter reported as no capacity")
	}
	if n := len(inj.launches()); n != 1 {
		t.Errorf("RunInstances called %d times, want 1", n)
	}
	if n := len(hooks()); n != 0 {
		t.Errorf("failover hook called %d times for a non-capacity error", n)
	}
	if live := w.live(req.Name); len(live) != 0 {
		t.Errorf("machines launched: %v", ids(live))
	}
}

func TestFailoverStopsAtTheAttemptCap(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	s := w.settings()
	s.Spot = true
	s.SubnetIDs = w.subnets[:3]
	// 3 subnets × 5 types × 2 markets = 30 choices, more than the cap.
	s.InstanceTypes = []string{"t3.large", "t3.xlarge", "m7i.large", "c7i.large", "r7i.large"}
	inj := &capacityInjector{fail: func(launchAttempt) string { return "InsufficientInstanceCapacity" }}
	var logs bytes.Buffer
	p, _ := w.injectedProvider("capped", s, inj, &logs)

	_, err := p.CreateInstance(context.Background(), w.request("capped"))
	var ce *ec2.CapacityError
	if !errors.As(err, &ce) || !errors.Is(err, ec2.ErrNoCapacity) {
		t.Fatalf("CreateInstance = %v, want a *ec2.CapacityError matching ErrNoCapacity", err)
	}
	if !ce.Capped || len(ce.Attempts) != 24 {
		t.Errorf("capped = %v after %d attempts, want capped after 24", ce.Capped, len(ce.Attempts))
	}
	if n := len(inj.launches()); n != 24 {
		t.Errorf("RunInstances called %d times, want 24", n)
	}
}

// logLine returns the first JSON log line containing msg.
func logLine(t *testing.T, logs *bytes.Buffer, msg string) string {
	t.Helper()
	for line := range strings.SplitSeq(logs.String(), "\n") {
		if strings.Contains(line, msg) {
			return line
		}
	}
	t.Fatalf("no log line contains %q in:\n%s", msg, logs.String())
	return ""
}
