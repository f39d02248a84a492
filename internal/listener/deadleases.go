package listener

import (
	"context"
	"log/slog"
	"time"

	"github.com/runfleet/runfleet/internal/store"
)

// FreeDeadLeases frees the listener leases of pools that a crashed
// predecessor held, on a store this process owns alone: that ownership
// (bolt's file lock) proves every other holder dead, and waiting out its
// lease (DefaultLeaseTTL) would only leave the scale sets unheard that
// much longer after a restart; the new listener then resumes the stored
// session at once. On a shared store a lease's holder may be alive:
// never call it there. Failures are logged; the listener then waits for
// the lease to expire, as it would have.
func FreeDeadLeases(ctx context.Context, leases store.Leases, pools []string, now time.Time, log *slog.Logger) {
	for _, pool := range pools {
		name := LeaseName(pool)
		cur, err := leases.GetLease(ctx, name)
		if err != nil {
			log.Warn("reading a listener lease failed; the listener waits for it to expire", "lease", name, "pool", pool, "error", err)
			continue
		}
		if cur.Free(now) {
			continue
		}
		if err := leases.ReleaseLease(ctx, cur); err != nil {
			log.Warn("freeing a dead process's listener lease failed; the listener waits for it to expire", "lease", name, "pool", pool, "error", err)
			continue
		}
		log.Info("freed the listener lease of a process that stopped without releasing it", "lease", name, "holder", cur.Holder, "pool", pool)
	}
}
