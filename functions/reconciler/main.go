// Command reconciler is the ReconcilerFunction, run by an EventBridge
// schedule. It builds the engine with the GitHub client and a provider per
// pool. The logic is in internal/lambdafn/work.
package main

import (
	"github.com/runfleet/runfleet/internal/lambdafn"
	"github.com/runfleet/runfleet/internal/lambdafn/work"
)

func main() { lambdafn.Start(lambdafn.RoleReconciler, work.Reconciler()) }
