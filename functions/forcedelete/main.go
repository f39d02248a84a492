// Command forcedelete is the ForceDeleteFunction, invoked directly by an
// operator with {"name": "...", "force": true}. It builds the engine with
// the GitHub client (the runner is removed from GitHub before the delete is
// queued) and, because the engine asks for one, a provider per pool. The
// logic is in internal/lambdafn/work.
package main

import (
	"github.com/runfleet/runfleet/internal/lambdafn"
	"github.com/runfleet/runfleet/internal/lambdafn/work"
)

func main() { lambdafn.Start(lambdafn.RoleForceDelete, work.ForceDelete()) }
