package ec2_test

import (
	"bytes"
	"context"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/runfleet/runfleet/internal/engine"
	"github.com/runfleet/runfleet/internal/enginetest"
	"github.com/runfleet/runfleet/internal/runner"
	"github.com/runfleet/runfleet/providers"
	"github.com/runfleet/runfleet/providers/ec2"
)

// engineWorld runs the real engine with the EC2 provider on moto as its
// one pool's provider.
func engineWorld(t *testing.T, w *world, p *ec2.Provider) *enginetest.World {
	t.Helper()
	return enginetest.NewWorld(t, enginetest.Options{
		InstallationID: w.installationID,
		Pools:          enginetest.OnePool(func(p *runner.Pool) { p.BootstrapTimeout = time.Minute }),
		WrapProvider:   func(string, providers.Provider) providers.Provider { return p },
		Engine: func(o *engine.Options) {
			o.MetadataURL = "https://control.example/metadata"
			o.CallbackURL = "https://control.example/callbacks"
			o.InstanceToken = func(inst, _ string, attempt int, _ time.Duration) (string, error) {
				return "token-" + inst + "-" + strconv.Itoa(attempt), nil
			}
		},
	})
}

// A job whose create finds no capacity in any AZ is not dropped: the
// instance goes back to pending_create with the EC2 fault, the job stays
// open, and once capacity returns the retry serves it.
func TestEngineKeepsTheJobOpenWhileNoAZHasCapacity(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	var full atomic.Bool
	full.Store(true)
	inj := &capacityInjector{fail: func(launchAttempt) string {
		if full.Load() {
			return "InsufficientInstanceCapacity"
		}
		return ""
	}}
	var logs bytes.Buffer
	p, _ := w.injectedProvider(enginetest.Pool, w.settings(), inj, &logs)
	ew := engineWorld(t, w, p)
	name := enginetest.InstanceName(43_001)

	ew.Deliver(enginetest.Event(runner.ActionQueued, 43_001, ""))
	ew.StartWorkers(1)
	ew.WaitFor("a create failed for capacity", func() bool {
		inst := ew.Instance(name)
		return inst != nil && strings.Contains(inst.ProviderFault, "InsufficientInstanceCapacity")
	})
	if job := ew.Job(43_001); job.Status != runner.JobOpen {
		t.Fatalf("job after a capacity failure: %+v, want open", job)
	}
	full.Store(false)
	inst := ew.WaitStatus(name, runner.StatusRunning)
	if job := ew.Job(43_001); job.Status != runner.JobOpen || job.Instance != name {
		t.Fatalf("job after the retry: %+v", job)
	}
	// Filtered by pool id: moto is shared by the whole test process, and
	// another run of this test uses the same instance name.
	live := slices.DeleteFunc(w.live(name), func(m ec2types.Instance) bool {
		return tagValue(m.Tags, "runfleet:pool-id") != w.poolID(enginetest.Pool)
	})
	if len(live) != 1 || aws.ToString(live[0].InstanceId) != inst.ProviderID {
		t.Fatalf("machines named %s: %v, want %s", name, ids(live), inst.ProviderID)
	}
}

// The reconcile pass refills the warm pool, does not take warm machines
// for orphans, and a queued job is then served by starting one.
func TestEngineRefillsTheWarmPoolAndAJobStartsAWarmMachine(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w := newWorld(t)
	calls := &callCounter{}
	p := w.warmProvider(enginetest.Pool, w.settings(), 1, calls)
	ew := engineWorld(t, w, p)

	rep, err := ew.Engine.Reconcile(ctx)
	if err != nil {
		t.Fatalf("Reconcile: %v", err)
	}
	warm := w.warm(enginetest.Pool)
	if len(warm) != 1 {
		t.Fatalf("warm machines after a reconcile pass = %v, want 1", ids(warm))
	}
	w.powerOff(warm)
	if rep, err = ew.Engine.Reconcile(ctx); err != nil || rep.OrphanMachinesDeleted != 0 {
		t.Fatalf("second Reconcile = %+v, %v; want no orphans", rep, err)
	}
	if st := w.instance(aws.ToString(warm[0].InstanceId)).State.Name; st != ec2types.InstanceStateNameStopped {
		t.Fatalf("the warm machine is %s after a reconcile pass, want still stopped", st)
	}
	calls.take()

	name := enginetest.InstanceName(41_002)
	ew.Deliver(enginetest.Event(runner.ActionQueued, 41_002, ""))
	ew.StartWorkers(1)
	inst := ew.WaitStatus(name, runner.StatusRunning)
	if inst.ProviderID != aws.ToString(warm[0].InstanceId) {
		t.Fatalf("the job's machine is %s, want the warm %s", inst.ProviderID, aws.ToString(warm[0].InstanceId))
	}
	if c := calls.take(); c["StartInstances"] != 1 || c["RunInstances"] != 0 {
		t.Fatalf("calls = %v, want a start, no launch", c)
	}
	if _, err := ew.Engine.Reconcile(ctx); err != nil {
		t.Fatalf("Reconcile: %v", err)
	}
	if n := len(w.warm(enginetest.Pool)); n != 1 {
		t.Fatalf("warm machines after the job took one and a pass ran = %d, want 1", n)
	}
}
