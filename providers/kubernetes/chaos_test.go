package kubernetes_test

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/runfleet/runfleet/internal/engine"
	"github.com/runfleet/runfleet/internal/enginetest"
	"github.com/runfleet/runfleet/internal/github"
	ghsim "github.com/runfleet/runfleet/internal/github/simulated"
	"github.com/runfleet/runfleet/internal/runner"
	"github.com/runfleet/runfleet/providers"
	"github.com/runfleet/runfleet/providers/kubernetes"
)

const chaosMaxRunners = 4

// chaos is the engine (internal/enginetest: real engine, store and queue,
// simulated GitHub) running its pool on the kubernetes provider against the
// real API server, while the test plays the cluster: it starts each pod
// the engine makes, and fails, evicts or loses the node of some of them
// before their runner comes online; it restarts the API server once.
type chaos struct {
	t     *testing.T
	e     *env
	w     *enginetest.World
	gh    *ghsim.GitHub
	ctx   context.Context
	nodes []string
	lost  bool

	seen    map[string]int  // pod uid → the order it was seen in
	faulted map[string]bool // pod name → a fault was injected
	served  map[int64]int
	peak    int
	faults  map[string]int
}

func newChaos(t *testing.T, adjust func(*enginetest.Options)) *chaos {
	e := newEnv(t)
	gh := ghsim.New()
	c := &chaos{t: t, e: e, gh: gh, ctx: context.Background(),
		seen: map[string]int{}, faulted: map[string]bool{}, served: map[int64]int{}, faults: map[string]int{}}
	const installation = "inst-k8s"
	s, err := kubernetes.ParseSettings(map[string]any{"image": "runner:1", "namespace": e.ns})
	if err != nil {
		t.Fatal(err)
	}
	prov, err := kubernetes.New(s, kubernetes.Options{
		Ownership: kubernetes.Ownership{ControllerID: "chaos", PoolID: runner.PoolID(installation, enginetest.Pool)},
		Config:    e.srv.Config(), Log: quiet, Now: e.clock.Now,
	})
	if err != nil {
		t.Fatal(err)
	}
	opts := enginetest.Options{
		InstallationID: installation,
		Pools: enginetest.OnePool(func(p *runner.Pool) {
			p.MaxRunners = chaosMaxRunners
			p.ProviderTimeout = 5 * time.Second
			// A pod that fails before its runner comes online is gone
			// from the provider's list at once, but the engine replaces
			// its instance when the runner's bootstrap time is up (as for
			// a machine that never boots): short here, so the run is.
			p.BootstrapTimeout = 4 * time.Second
		}),
		GitHub:        func(*slog.Logger) github.GitHub { return gh },
		WrapProvider:  func(string, providers.Provider) providers.Provider { return prov },
		ConfirmWindow: 20 * time.Millisecond,
		Engine: func(o *engine.Options) {
			o.MetadataURL = "http://runfleet:8080/metadata"
			o.CallbackURL = "http://runfleet:8080/callbacks"
			o.InstanceToken = func(inst, _ string, attempt int, _ time.Duration) (string, error) {
				return "token-" + inst + "-" + strconv.Itoa(attempt), nil
			}
		},
	}
	if adjust != nil {
		adjust(&opts)
	}
	c.w = enginetest.NewWorld(t, opts)
	for i := range 3 {
		node := fmt.Sprintf("%s-n%d", e.ns, i)
		if err := e.kubelet.AddNode(c.ctx, node); err != nil {
			t.Fatal(err)
		}
		c.nodes = append(c.nodes, node)
	}
	return c
}

// playKubelet starts every new pod on a node and injects this pod's fault,
// decided by the order pods appeared: every 5th fails, every 5th+2 is
// evicted, and once 8 pods were seen the third node is lost with what runs
// on it.
func (c *chaos) playKubelet() {
	pods := c.e.pods(c.t)
	live := 0
	for _, pod := range pods {
		if pod.DeletionTimestamp == nil && pod.Status.Phase != corev1.PodFailed && pod.Status.Phase != corev1.PodSucceeded {
			live++
		}
		if _, ok := c.seen[string(pod.UID)]; ok || pod.DeletionTimestamp != nil {
			continue
		}
		k := len(c.seen)
		c.seen[string(pod.UID)] = k
		nodes := c.nodes
		if c.lost {
			nodes = nodes[:2]
		}
		if err := c.e.kubelet.Run(c.ctx, pod.Name, nodes[k%len(nodes)]); err != nil {
			c.t.Logf("kubelet: run %s: %v", pod.Name, err)
			continue
		}
		switch k % 5 {
		case 1:
			c.fault("failed", c.e.kubelet.Fail(c.ctx, pod.Name), pod.Name)
		case 3:
			c.fault("evicted", c.e.kubelet.Evict(c.ctx, pod.Name), pod.Name)
		}
	}
	c.peak = max(c.peak, live)
	if !c.lost && len(c.seen) >= 8 {
		c.lost = true
		node := c.nodes[2]
		on, _ := c.e.srv.Client(c.t).CoreV1().Pods(c.e.ns).List(c.ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + node})
		for _, pod := range on.Items {
			c.faulted[pod.Name] = true
		}
		c.fault("node lost", c.e.kubelet.LoseNode(c.ctx, node), node)
	}
}

func (c *chaos) fault(kind string, err error, what string) {
	if err != nil {
		c.t.Logf("kubelet: %s %s: %v", kind, what, err)
		return
	}
	c.faults[kind]++
	c.faulted[what] = true
}

// podRunning reports whether instance's pod is up and healthy.
func (c *chaos) podRunning(instance string) bool {
	pod, err := c.e.srv.Client(c.t).CoreV1().Pods(c.e.ns).Get(c.ctx, instance, metav1.GetOptions{})
	return err == nil && pod.DeletionTimestamp == nil && pod.Status.Phase == corev1.PodRunning && !c.faulted[instance]
}

// serve plays GitHub: a runner whose pod runs comes online, and a job
// whose one running instance is online is started and finished there; the
// runner then exits and its pod succeeds.
func (c *chaos) serve(ids []int64, open map[int64]bool) {
	for _, r := range c.gh.Runners() {
		if c.podRunning(r.Name) {
			c.gh.SetOnline(r.Name, true)
		}
	}
	for _, id := range ids {
		if !open[id] {
			continue
		}
		job := c.w.Job(id)
		covering := 0
		for _, inst := range c.w.Live() {
			if inst.Name == job.Instance && inst.Status == runner.StatusRunning {
				covering++
			}
		}
		if covering > 1 {
			c.t.Fatalf("job %d is covered by %d running instances", id, covering)
		}
		if covering == 0 || !c.podRunning(job.Instance) {
			continue
		}
		c.gh.StartJob(id, job.Instance)
		c.w.Deliver(enginetest.Event(runner.ActionInProgress, id, job.Instance))
		c.gh.FinishJob(id, "success")
		c.w.Deliver(enginetest.Event(runner.ActionCompleted, id, job.Instance))
		c.served[id]++
		delete(open, id)
		if err := c.e.kubelet.Succeed(c.ctx, job.Instance); err != nil && !apierrors.IsNotFound(err) {
			c.t.Logf("kubelet: %s exits: %v", job.Instance, err)
		}
	}
}

func (c *chaos) reconcile() {
	if _, err := c.w.Engine.Reconcile(c.ctx); err != nil {
		c.t.Logf("reconcile: %v", err)
	}
}

func (c *chaos) state() string {
	var b strings.Builder
	jobs, _ := c.w.Store.ListOpenJobs(c.ctx)
	for _, j := range jobs {
		fmt.Fprintf(&b, "open job %s instance=%s made=%d\n", j.Key(), j.Instance, j.Made)
	}
	for _, in := range c.w.Live() {
		fmt.Fprintf(&b, "live %s %s runner=%s fault=%q\n", in.Name, in.Status, in.RunnerStatus, in.ProviderFault)
	}
	for _, p := range c.e.pods(c.t) {
		fmt.Fprintf(&b, "pod %s %s deleting=%v\n", p.Name, p.Status.Phase, p.DeletionTimestamp != nil)
	}
	for _, s := range c.e.secrets(c.t) {
		fmt.Fprintf(&b, "secret %s created %s\n", s.Name, s.CreationTimestamp.UTC().Format(time.RFC3339))
	}
	return b.String()
}

func TestChaosEveryJobServedOnceNothingLeft(t *testing.T) {
	c := newChaos(t, nil)
	ids := make([]int64, 12)
	open := map[int64]bool{}
	for i := range ids {
		ids[i] = int64(7000 + i)
		open[ids[i]] = true
		c.w.Deliver(enginetest.Event(runner.ActionQueued, ids[i], ""))
	}
	c.w.StartWorkers(4)
	restarted := false
	enginetest.Eventually(t, "every job served", func() bool {
		c.playKubelet()
		c.serve(ids, open)
		if !restarted && len(open) <= len(ids)/2 {
			// The API server goes away and comes back (etcd keeps the
			// pods): the engine's calls meanwhile fail and are retried.
			restarted = true
			c.e.srv.StopAPIServer()
			c.reconcile()
			if err := c.e.srv.StartAPIServer(); err != nil {
				t.Fatalf("restart the API server: %v", err)
			}
			c.faults["API server restarted"]++
		}
		c.reconcile()
		return len(open) == 0
	}, c.state)
	// A create the API server's outage cut between its Secret and its pod
	// leaves the Secret; the provider's list removes such a Secret once it
	// is older than any create takes.
	enginetest.Eventually(t, "no instance or pod left", func() bool {
		c.reconcile()
		return len(c.w.Live()) == 0 && len(c.e.pods(t)) == 0
	}, c.state)
	t.Logf("bootstrap Secrets left by creates the outage cut: %d", len(c.e.secrets(t)))
	c.e.clock.Advance(3 * time.Minute)
	enginetest.Eventually(t, "no instance, pod or Secret left", func() bool {
		c.reconcile()
		return len(c.w.Live()) == 0 && len(c.e.pods(t)) == 0 && len(c.e.secrets(t)) == 0
	}, c.state)
	for _, id := range ids {
		if c.served[id] != 1 {
			t.Errorf("job %d served %d times; want once", id, c.served[id])
		}
		if job := c.w.Job(id); job.Status != runner.JobClosed {
			t.Errorf("job %d is %s; want closed", id, job.Status)
		}
	}
	if c.faults["failed"] == 0 || c.faults["evicted"] == 0 || c.faults["node lost"] != 1 || c.faults["API server restarted"] != 1 {
		t.Errorf("faults injected %v; want each kind", c.faults)
	}
	if c.peak > chaosMaxRunners {
		t.Errorf("%d live pods at once; max_runners is %d", c.peak, chaosMaxRunners)
	}
	t.Logf("%d jobs served once each; %d pods made; faults %v; peak %d live pods", len(ids), len(c.seen), c.faults, c.peak)
}
