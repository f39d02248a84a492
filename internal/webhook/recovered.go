package webhook

import (
	"fmt"

	"github.com/runfleet/runfleet/internal/runner"
)

// ParseRecovered reads a delivery recovered from GitHub's webhook delivery
// log (engine.DeliveryRecovery.Parse) with the parser Handle uses. There is
// no signature to check: the payload came from GitHub's API, authenticated
// as the App. The log's payload is the JSON body whatever content type the
// webhook is set to send, so no form decoding applies. Only workflow_job
// is acted on, as in Handle.
func ParseRecovered(event string, payload []byte) (runner.JobEvent, error) {
	if event != EventWorkflowJob {
		return runner.JobEvent{}, fmt.Errorf("webhook: event %q is not acted on; only %s is", event, EventWorkflowJob)
	}
	ev, err := ParseWorkflowJob(payload)
	if err != nil {
		return runner.JobEvent{}, err
	}
	return ev.JobEvent(), nil
}
