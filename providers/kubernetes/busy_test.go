package kubernetes_test

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/runfleet/runfleet/internal/enginetest"
	"github.com/runfleet/runfleet/internal/github"
	ghsim "github.com/runfleet/runfleet/internal/github/simulated"
	"github.com/runfleet/runfleet/internal/runner"
)

// The engine's guarantee holds on pods: GitHub's runner list says the
// runner is idle twice, a confirmation window apart, so the engine deletes
// it — but GitHub's DELETE answers 422 (still running a job), and the pod
// is not touched. Once the job completes, pod and Secret go.
func TestBusyRunnersPodSurvivesGitHubs422(t *testing.T) {
	c := newChaos(t, func(o *enginetest.Options) { o.DeleteBackoffMax = time.Hour })
	c.w.Deliver(enginetest.Event(runner.ActionQueued, 8001, ""))
	c.w.StartWorkers(2)
	var name string
	enginetest.Eventually(t, "the runner's pod runs and its runner is online", func() bool {
		c.playKubelet()
		name = c.w.Job(8001).Instance
		if name == "" || !c.podRunning(name) {
			return false
		}
		c.gh.SetOnline(name, true)
		inst := c.w.Instance(name)
		return inst.Status == runner.StatusRunning
	}, c.state)
	c.gh.StartJob(8001, name)
	c.w.Deliver(enginetest.Event(runner.ActionInProgress, 8001, name))

	c.gh.SetBusy(name, false) // the list lies twice, a window apart …
	c.reconcile()
	time.Sleep(50 * time.Millisecond)
	c.gh.FailNext(ghsim.OpRemoveRunner, fmt.Errorf("%w: 422 still running a job", github.ErrRunnerBusy)) // … the DELETE does not
	c.reconcile()
	enginetest.Eventually(t, "the delete met GitHub's 422", func() bool {
		inst := c.w.Instance(name)
		return inst.Status == runner.StatusPendingDelete && inst.Attempts > 0
	}, c.state)
	pod, err := c.e.srv.Client(t).CoreV1().Pods(c.e.ns).Get(c.ctx, name, metav1.GetOptions{})
	if err != nil || pod.DeletionTimestamp != nil || pod.Status.Phase != corev1.PodRunning {
		t.Fatalf("the busy runner's pod after GitHub's 422: %v, %v", pod, err)
	}

	c.gh.FinishJob(8001, "success")
	c.w.Deliver(enginetest.Event(runner.ActionCompleted, 8001, name))
	enginetest.Eventually(t, "the finished runner's pod and Secret are removed", func() bool {
		c.reconcile()
		return len(c.e.pods(t)) == 0 && len(c.e.secrets(t)) == 0
	}, c.state)
}
