package work

import (
	"context"
	"log/slog"
)

// maxLegacyMigrationFailures bounds how often one execution environment
// retries the move of old-layout instances: a table whose legacy index is
// gone (a later release drops it) must not log a warning every minute.
const maxLegacyMigrationFailures = 3

// migrateLegacyLive moves live instances written by a release before the
// sharded live index into it, before the pass lists them: until they move,
// the lists cannot see them (internal/store/dynamodb/migrate.go). Once a
// run moves nothing, the table is upgraded for good — nothing writes the
// old layout any more — and this environment stops asking: after that it
// costs nothing, before it one Query of a sparse index per pass.
func (a *App) migrateLegacyLive(ctx context.Context, log *slog.Logger) {
	if a.legacyMigrated || a.Store == nil {
		return
	}
	moved, err := a.Store.MigrateLegacyLive(ctx)
	if err != nil {
		a.legacyMigrationFailures++
		if a.legacyMigrationFailures >= maxLegacyMigrationFailures {
			a.legacyMigrated = true
		}
		log.WarnContext(ctx, "live instances of the previous table layout could not be moved; they are moved by their next write",
			"error", err, "moved", moved, "attempt", a.legacyMigrationFailures)
		return
	}
	if moved == 0 {
		a.legacyMigrated = true
	}
}
