// Command listener is the ListenerFunction, run by an EventBridge schedule
// every minute: the scale-set pools' listeners, each under its store lease
// until shortly before the invocation's timeout, resuming the message
// session the previous invocation left. It builds the engine's ledger (the
// store, the queue, the pools) and the scale-set clients: no provider. The
// logic is in internal/lambdafn/listen.
package main

import (
	"github.com/runfleet/runfleet/internal/lambdafn"
	"github.com/runfleet/runfleet/internal/lambdafn/listen"
)

func main() { lambdafn.Start(lambdafn.RoleListener, listen.Listener()) }
