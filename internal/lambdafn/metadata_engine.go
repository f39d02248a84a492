package lambdafn

import (
	"fmt"
	"log/slog"

	"github.com/runfleet/runfleet/internal/engine"
)

// bootstrapEngine is the part of the engine a booting machine's requests
// run on, built per invocation so its lines name the Lambda request.
// Bootstrap reads and compare-and-sets the machine's instance and
// credentials and may enqueue a delete: the ledger's store and queue are
// all it needs. It never calls GitHub or a provider, and never looks a
// pool up, so it gets no pools (the function's role may not read the
// installation id either).
func (a *MetadataApp) bootstrapEngine(log *slog.Logger) (*engine.Ledger, error) {
	in, err := engine.NewLedger(engine.LedgerOptions{
		ControllerID: a.Config.ControllerID,
		Store:        a.Store,
		Queue:        a.Queue,
		Logger:       log,
		Observer:     a.Metrics,
	})
	if err != nil {
		return nil, fmt.Errorf("lambdafn: %w", err)
	}
	return in, nil
}
