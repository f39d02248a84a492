package simulated

import (
	"slices"
	"strings"
)

// BusyLabel makes a demo of GitHub's busy-runner refusal possible without
// a real job: a runner registered with this label is online and busy from
// the moment it registers, as if it had taken a job that never ends, so an
// ordinary removal fails with github.ErrRunnerBusy (GitHub's 422) until
// SetBusy(name, false). A pool lists it among its labels to get such
// runners (examples/local.yaml's busy-demo pool).
const BusyLabel = "simulated-busy"

func busyOnRegistration(labels []string) bool {
	return slices.ContainsFunc(labels, func(l string) bool { return strings.EqualFold(l, BusyLabel) })
}
