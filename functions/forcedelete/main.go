// Command forcedelete is the ForceDeleteFunction, the operator's delete,
// invoked directly with {"name": "<instance>", "force": true|false}: without
// force a runner GitHub reports busy is refused, with force the delete
// completes whatever GitHub or the provider say. It builds the engine's
// registrar (engine.Registrar): the store, the queue and the GitHub client
// (the runner is removed from GitHub before the delete is queued), and no
// provider: a worker deletes the machine. The logic is in internal/lambdafn/work.
package main

import (
	"github.com/runfleet/runfleet/internal/lambdafn"
	"github.com/runfleet/runfleet/internal/lambdafn/work"
)

func main() { lambdafn.Start(lambdafn.RoleForceDelete, work.ForceDelete()) }
