package simulated_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/runfleet/runfleet/internal/runner"
	"github.com/runfleet/runfleet/providers"
	"github.com/runfleet/runfleet/providers/simulated"
)

func request(name, pool string) providers.CreateRequest {
	return providers.CreateRequest{Name: name, Pool: pool, PoolID: poolID(pool), OSType: "linux", Arch: "amd64", Labels: []string{"linux"}}
}

// poolID is a pool's provider-side id in the tests' installation; none
// for no pool.
func poolID(pool string) string {
	if pool == "" {
		return ""
	}
	return runner.PoolID("installation-test", pool)
}

func mustCreate(t *testing.T, p *simulated.Provider, name, pool string) providers.Instance {
	t.Helper()
	inst, err := p.CreateInstance(context.Background(), request(name, pool))
	if err != nil {
		t.Fatalf("create %s: %v", name, err)
	}
	return inst
}

func TestLifecycle(t *testing.T) {
	ctx := context.Background()
	p := simulated.NewWithOptions(simulated.Options{})
	a := mustCreate(t, p, "runfleet-a-1-1", "linux")
	mustCreate(t, p, "runfleet-b-2-1", "linux")
	mustCreate(t, p, "runfleet-c-3-1", "gpu")

	if a.Name != "runfleet-a-1-1" || a.ProviderID == "" || a.Status != providers.StatusRunning || a.OSType != "linux" || a.OSArch != "amd64" {
		t.Errorf("created %+v", a)
	}
	for _, ref := range []string{a.Name, a.ProviderID} {
		got, err := p.GetInstance(ctx, ref)
		if err != nil || got.ProviderID != a.ProviderID {
			t.Errorf("Get(%s) = %+v, %v", ref, got, err)
		}
	}

	list, err := p.ListInstances(ctx, poolID("linux"))
	if err != nil || len(list) != 2 || list[0].Name != "runfleet-a-1-1" || list[1].Name != "runfleet-b-2-1" {
		t.Errorf("List(linux) = %+v, %v", list, err)
	}
	if list, _ := p.ListInstances(ctx, poolID("none")); len(list) != 0 {
		t.Errorf("List(none) = %+v", list)
	}

	if err := p.StopInstance(ctx, a.ProviderID); err != nil {
		t.Fatal(err)
	}
	if got, _ := p.GetInstance(ctx, a.Name); got.Status != providers.StatusStopped {
		t.Errorf("after stop: %s", got.Status)
	}
	if err := p.StartInstance(ctx, a.Name); err != nil {
		t.Fatal(err)
	}
	if got, _ := p.GetInstance(ctx, a.Name); got.Status != providers.StatusRunning {
		t.Errorf("after start: %s", got.Status)
	}

	if err := p.DeleteInstance(ctx, a.ProviderID); err != nil {
		t.Fatal(err)
	}
	if _, err := p.GetInstance(ctx, a.Name); !errors.Is(err, providers.ErrNotFound) {
		t.Errorf("deleted machine: %v", err)
	}
	if err := p.DeleteInstance(ctx, a.Name); err != nil {
		t.Errorf("deleting a gone machine must succeed: %v", err)
	}
	if err := p.DeleteInstance(ctx, "never-existed"); err != nil {
		t.Errorf("deleting an unknown machine must succeed: %v", err)
	}

	if err := p.RemoveAllInstances(ctx); err != nil {
		t.Fatal(err)
	}
	if m := p.Machines(); len(m) != 0 {
		t.Errorf("after RemoveAll: %+v", m)
	}
}

func TestReturnedInstancesAreCopies(t *testing.T) {
	p := simulated.NewWithOptions(simulated.Options{})
	inst := mustCreate(t, p, "a", "pool")
	inst.Addresses[0].Address = "changed"
	got, _ := p.GetInstance(context.Background(), "a")
	if got.Addresses[0].Address == "changed" {
		t.Error("caller changed the provider's machine")
	}
}

func TestNotFoundErrors(t *testing.T) {
	ctx := context.Background()
	p := simulated.NewWithOptions(simulated.Options{})
	checks := map[string]error{}
	_, checks["GetInstance"] = p.GetInstance(ctx, "nope")
	checks["StartInstance"] = p.StartInstance(ctx, "nope")
	checks["StopInstance"] = p.StopInstance(ctx, "nope")
	for op, err := range checks {
		var pe *providers.Error
		if !errors.Is(err, providers.ErrNotFound) || !errors.As(err, &pe) || pe.Op != op || pe.Instance != "nope" || pe.Fault == "" {
			t.Errorf("%s: %#v", op, err)
		}
	}
}

func TestDuplicateCreateFails(t *testing.T) {
	p := simulated.NewWithOptions(simulated.Options{})
	first := mustCreate(t, p, "a", "pool")
	_, err := p.CreateInstance(context.Background(), request("a", "pool"))
	var pe *providers.Error
	if !errors.As(err, &pe) || pe.Fault != "duplicate: a machine named a already exists" {
		t.Fatalf("second create: %v", err)
	}
	if m := p.Machines(); len(m) != 1 || m[0].ProviderID != first.ProviderID {
		t.Errorf("machines: %+v", m)
	}
}

// TestListSelectsByPoolIDNotName: two installations' pools of one name
// never list each other's machines.
func TestListSelectsByPoolIDNotName(t *testing.T) {
	ctx := context.Background()
	p := simulated.NewWithOptions(simulated.Options{})
	staging, production := request("runfleet-linux-7-1", "linux"), request("runfleet-linux-8-1", "linux")
	staging.PoolID, production.PoolID = runner.PoolID("staging", "linux"), runner.PoolID("production", "linux")
	for _, req := range []providers.CreateRequest{staging, production} {
		if _, err := p.CreateInstance(ctx, req); err != nil {
			t.Fatal(err)
		}
	}
	list, err := p.ListInstances(ctx, production.PoolID)
	if err != nil || len(list) != 1 || list[0].Name != production.Name {
		t.Fatalf("production lists %+v, %v; want only its own machine", list, err)
	}
	if list, _ := p.ListInstances(ctx, "linux"); len(list) != 0 {
		t.Fatalf("listing by the bare pool name found %+v", list)
	}
}

func TestCreateNeedsNameAndPool(t *testing.T) {
	p := simulated.NewWithOptions(simulated.Options{})
	for _, req := range []providers.CreateRequest{request("", "pool"), request("a", "")} {
		if _, err := p.CreateInstance(context.Background(), req); err == nil {
			t.Errorf("%+v accepted", req)
		}
	}
}

func TestAlwaysFail(t *testing.T) {
	ctx := context.Background()
	p := simulated.NewWithOptions(simulated.Options{Faults: simulated.Faults{AlwaysFailCreate: true, AlwaysFailDelete: true}})
	for i := range 5 {
		name := fmt.Sprint("m", i)
		_, err := p.CreateInstance(ctx, request(name, "pool"))
		if providers.Fault(err) != simulated.FaultCreateFailed {
			t.Errorf("create %d: %v", i, err)
		}
		err = p.DeleteInstance(ctx, name)
		var pe *providers.Error
		if !errors.As(err, &pe) || pe.Op != "DeleteInstance" || pe.Fault != simulated.FaultDeleteFailed {
			t.Errorf("delete %d: %v", i, err)
		}
	}
	if m := p.Machines(); len(m) != 0 {
		t.Errorf("failed creates left machines: %+v", m)
	}
	if err := p.RemoveAllInstances(ctx); providers.Fault(err) != simulated.FaultDeleteFailed {
		t.Errorf("RemoveAll: %v", err)
	}
	s := p.Stats()
	if s.Creates != 5 || s.CreateFailures != 5 || s.Deletes != 5 || s.DeleteFailures != 6 {
		t.Errorf("stats %+v", s)
	}
}

func TestAlwaysFailCreateOnly(t *testing.T) {
	ctx := context.Background()
	p := simulated.NewWithOptions(simulated.Options{Faults: simulated.Faults{AlwaysFailCreate: true}})
	if _, err := p.CreateInstance(ctx, request("a", "pool")); err == nil {
		t.Error("create succeeded")
	}
	if err := p.DeleteInstance(ctx, "a"); err != nil {
		t.Errorf("delete failed: %v", err)
	}
}

func TestFailureRates(t *testing.T) {
	ctx := context.Background()
	count := func(f simulated.Faults) (createFails, deleteFails int) {
		p := simulated.NewWithOptions(simulated.Options{Faults: f, Seed: 1})
		for i := range 1000 {
			name := fmt.Sprint("m", i)
			if _, err := p.CreateInstance(ctx, request(name, "pool")); err != nil {
				createFails++
			}
			if err := p.DeleteInstance(ctx, name); err != nil {
				deleteFails++
			}
		}
		return createFails, deleteFails
	}
	// Seeded, so these counts are the same on every run.
	c, d := count(simulated.Faults{CreateFailureRate: 0.3})
	if c < 240 || c > 360 || d != 0 {
		t.Errorf("create rate 0.3: %d create and %d delete failures of 1000", c, d)
	}
	c, d = count(simulated.Faults{DeleteFailureRate: 0.5})
	if c != 0 || d < 430 || d > 570 {
		t.Errorf("delete rate 0.5: %d create and %d delete failures of 1000", c, d)
	}
	c, d = count(simulated.Faults{CreateFailureRate: 1, DeleteFailureRate: 0})
	if c != 1000 || d != 0 {
		t.Errorf("rate 1/0: %d and %d", c, d)
	}
}

func TestSeedIsDeterministic(t *testing.T) {
	run := func(seed uint64) (ids []string, outcomes []bool) {
		p := simulated.NewWithOptions(simulated.Options{Seed: seed, Faults: simulated.Faults{CreateFailureRate: 0.5}})
		for i := range 50 {
			inst, err := p.CreateInstance(context.Background(), request(fmt.Sprint("m", i), "pool"))
			ids = append(ids, inst.ProviderID)
			outcomes = append(outcomes, err == nil)
		}
		return ids, outcomes
	}
	ids1, out1 := run(9)
	ids2, out2 := run(9)
	ids3, out3 := run(10)
	if fmt.Sprint(ids1, out1) != fmt.Sprint(ids2, out2) {
		t.Error("same seed, different runs")
	}
	if fmt.Sprint(ids1, out1) == fmt.Sprint(ids3, out3) {
		t.Error("different seeds, same run")
	}
}

func TestProviderIDsAreUnique(t *testing.T) {
	p := simulated.NewWithOptions(simulated.Options{})
	seen := map[string]bool{}
	for i := range 500 {
		inst := mustCreate(t, p, fmt.Sprint("m", i), "pool")
		if seen[inst.ProviderID] {
			t.Fatalf("duplicate id %s", inst.ProviderID)
		}
		seen[inst.ProviderID] = true
	}
}

func TestLeaveFailedMachines(t *testing.T) {
	ctx := context.Background()
	p := simulated.NewWithOptions(simulated.Options{Faults: simulated.Faults{AlwaysFailCreate: true, LeaveFailedMachines: true}})
	if _, err := p.CreateInstance(ctx, request("half", "pool")); err == nil {
		t.Fatal("create succeeded")
	}
	got, err := p.GetInstance(ctx, "half")
	if err != nil || got.Status != providers.StatusError || got.Fault != simulated.FaultCreateFailed {
		t.Fatalf("half-made machine: %+v, %v", got, err)
	}
	// A retry under the same name meets the leftover until it is deleted by
	// name (lessons-from-peers P13).
	p.SetFaults(simulated.Faults{})
	if _, err := p.CreateInstance(ctx, request("half", "pool")); err == nil {
		t.Fatal("second machine with the same name")
	}
	if err := p.DeleteInstance(ctx, "half"); err != nil {
		t.Fatal(err)
	}
	mustCreate(t, p, "half", "pool")
}

func TestFailCreateAsStatus(t *testing.T) {
	p := simulated.NewWithOptions(simulated.Options{Faults: simulated.Faults{AlwaysFailCreate: true, FailCreateAsStatus: true}})
	inst, err := p.CreateInstance(context.Background(), request("a", "pool"))
	if err != nil || inst.Status != providers.StatusError || inst.Fault != simulated.FaultCreateFailed || inst.ProviderID == "" {
		t.Fatalf("got %+v, %v", inst, err)
	}
	if m := p.Machines(); len(m) != 1 || m[0].Status != providers.StatusError {
		t.Errorf("machines %+v", m)
	}
}

func TestHangCreatesUntilContextEnds(t *testing.T) {
	for _, leave := range []bool{false, true} {
		t.Run(fmt.Sprint("leave=", leave), func(t *testing.T) {
			p := simulated.NewWithOptions(simulated.Options{Faults: simulated.Faults{HangCreates: true, LeaveFailedMachines: leave}})
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() {
				_, err := p.CreateInstance(ctx, request("stuck", "pool"))
				done <- err
			}()
			select {
			case err := <-done:
				t.Fatalf("hung create returned before cancel: %v", err)
			case <-time.After(20 * time.Millisecond):
			}
			cancel()
			err := <-done
			if !errors.Is(err, context.Canceled) || providers.Fault(err) != simulated.FaultHung {
				t.Errorf("got %v", err)
			}
			if got := len(p.Machines()); got != map[bool]int{false: 0, true: 1}[leave] {
				t.Errorf("%d machines left", got)
			}
			if p.Stats().Hangs != 1 {
				t.Errorf("stats %+v", p.Stats())
			}
		})
	}
}

func TestHangDeletesUntilDeadline(t *testing.T) {
	p := simulated.NewWithOptions(simulated.Options{})
	mustCreate(t, p, "a", "pool")
	p.SetFaults(simulated.Faults{HangDeletes: true})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	err := p.DeleteInstance(ctx, "a")
	if !errors.Is(err, context.DeadlineExceeded) || providers.Fault(err) != simulated.FaultHung {
		t.Errorf("got %v", err)
	}
	if len(p.Machines()) != 1 {
		t.Error("a hung delete removed the machine")
	}
}

func TestLatency(t *testing.T) {
	p := simulated.NewWithOptions(simulated.Options{CreateLatency: 30 * time.Millisecond, DeleteLatency: 20 * time.Millisecond})
	start := time.Now()
	mustCreate(t, p, "a", "pool")
	if elapsed := time.Since(start); elapsed < 30*time.Millisecond {
		t.Errorf("create took %s, less than its latency", elapsed)
	}
	start = time.Now()
	if err := p.DeleteInstance(context.Background(), "a"); err != nil {
		t.Fatal(err)
	}
	if elapsed := time.Since(start); elapsed < 20*time.Millisecond {
		t.Errorf("delete took %s, less than its latency", elapsed)
	}
}

func TestLatencyHonoursContext(t *testing.T) {
	p := simulated.NewWithOptions(simulated.Options{CreateLatency: time.Hour, DeleteLatency: time.Hour})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	if _, err := p.CreateInstance(ctx, request("a", "pool")); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("create: %v", err)
	}
	if len(p.Machines()) != 0 {
		t.Error("a cancelled create made a machine")
	}
	if err := p.DeleteInstance(ctx, "a"); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("delete: %v", err)
	}
	if _, err := p.GetInstance(ctx, "a"); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("get: %v", err)
	}
	if _, err := p.ListInstances(ctx, poolID("pool")); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("list: %v", err)
	}
}

func TestSetFaultsLetsAStuckDeleteFinish(t *testing.T) {
	ctx := context.Background()
	p := simulated.NewWithOptions(simulated.Options{})
	mustCreate(t, p, "a", "pool")
	p.SetFaults(simulated.Faults{AlwaysFailDelete: true})
	if err := p.DeleteInstance(ctx, "a"); err == nil {
		t.Fatal("delete succeeded")
	}
	if !p.Faults().AlwaysFailDelete {
		t.Error("Faults() does not report the fault")
	}
	p.SetFaults(simulated.Faults{})
	if err := p.DeleteInstance(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	if len(p.Machines()) != 0 {
		t.Error("machine survived")
	}
}

func TestCountersPerName(t *testing.T) {
	ctx := context.Background()
	p := simulated.NewWithOptions(simulated.Options{})
	a := mustCreate(t, p, "a", "pool")
	_, _ = p.CreateInstance(ctx, request("a", "pool")) // duplicate, still a call
	mustCreate(t, p, "b", "pool")
	_ = p.DeleteInstance(ctx, a.ProviderID)
	_ = p.DeleteInstance(ctx, "a")
	_ = p.DeleteInstance(ctx, a.ProviderID) // by id after it is gone
	_, _ = p.GetInstance(ctx, "b")
	_, _ = p.ListInstances(ctx, poolID("pool"))

	if p.CreateCalls("a") != 2 || p.CreateCalls("b") != 1 || p.CreateCalls("c") != 0 {
		t.Errorf("creates a=%d b=%d c=%d", p.CreateCalls("a"), p.CreateCalls("b"), p.CreateCalls("c"))
	}
	if p.DeleteCalls("a") != 3 || p.DeleteCalls("b") != 0 {
		t.Errorf("deletes a=%d b=%d", p.DeleteCalls("a"), p.DeleteCalls("b"))
	}
	want := simulated.Stats{Creates: 3, Deletes: 3, Gets: 1, Lists: 1, CreateFailures: 1}
	if got := p.Stats(); got != want {
		t.Errorf("stats %+v, want %+v", got, want)
	}
}

func TestConcurrentUse(t *testing.T) {
	ctx := context.Background()
	p := simulated.NewWithOptions(simulated.Options{LatencyJitter: time.Millisecond, Faults: simulated.Faults{CreateFailureRate: 0.2, DeleteFailureRate: 0.2}})
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			for i := range 50 {
				name := fmt.Sprintf("w%d-%d", w, i)
				_, _ = p.CreateInstance(ctx, request(name, "pool"))
				_, _ = p.ListInstances(ctx, poolID("pool"))
				for p.DeleteInstance(ctx, name) != nil {
				}
			}
		})
	}
	wg.Wait()
	if m := p.Machines(); len(m) != 0 {
		t.Errorf("%d machines left", len(m))
	}
	if s := p.Stats(); s.Creates != 400 || s.Deletes != 400+s.DeleteFailures {
		t.Errorf("stats %+v", s)
	}
}
