package engine

import (
	"context"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/runfleet/runfleet/internal/github"
	"github.com/runfleet/runfleet/providers"
)

// Runner downloads ("tools") are what GARM providers install the runner
// from; GitHub lists them per owner. The list changes only when GitHub
// releases a runner, so it is cached per owner: in steady state a job costs
// no GitHub call for it, and the per-job budget stays JIT + remove.
const (
	// runnerDownloadsTTL is how long a listing is used.
	runnerDownloadsTTL = time.Hour
	// runnerDownloadsRetry is how long creates go without runner downloads after a failed
	// listing before GitHub is asked again, so a GitHub that refuses (a
	// missing permission, a rate limit) costs one call per owner per
	// interval, not one per job.
	runnerDownloadsRetry = 5 * time.Minute
	// runnerDownloadsTimeout bounds a listing: a slow GitHub delays a create
	// by no more than this.
	runnerDownloadsTimeout = 10 * time.Second
)

// downloadsCache holds each owner's runner downloads. The zero value is ready.
// One worker lists an owner's downloads at a time; others creating for the
// same owner wait for its answer instead of asking GitHub too.
type downloadsCache struct {
	mu      sync.Mutex
	byOwner map[string]*downloadsEntry
}

// downloadsEntry is one owner's listing, in flight until done is closed.
type downloadsEntry struct {
	done chan struct{}
	// Set before done is closed:
	ready     bool // false: the lister gave up (its context ended); ask again
	downloads []providers.RunnerDownload
	expires   time.Time
}

// runnerDownloads returns the runner downloads to offer a machine of owner's:
// cached, else listed now. A failed listing never fails the create — it is
// logged, and the machine gets no runner downloads (providers that bring their own
// runner do not need them).
func (e *Engine) runnerDownloads(ctx context.Context, log *slog.Logger, owner github.Owner) []providers.RunnerDownload {
	key := strings.ToLower(owner.String())
	for {
		entry, lister := e.memory.downloads.claim(key, e.now())
		if lister {
			return slices.Clone(e.listRunnerDownloads(ctx, log, owner, key, entry))
		}
		select {
		case <-entry.done:
			if entry.ready {
				return slices.Clone(entry.downloads)
			}
		case <-ctx.Done():
			return nil
		}
	}
}

// claim returns the owner's entry: a current or in-flight one, or — when
// there is none or it has expired — a new in-flight entry the caller must
// fill (lister true).
func (c *downloadsCache) claim(key string, now time.Time) (entry *downloadsEntry, lister bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if entry := c.byOwner[key]; entry != nil && (!entry.ready || now.Before(entry.expires)) {
		return entry, false
	}
	if c.byOwner == nil {
		c.byOwner = make(map[string]*downloadsEntry)
	}
	entry = &downloadsEntry{done: make(chan struct{})}
	c.byOwner[key] = entry
	return entry, true
}

// settle records the lister's outcome and wakes the waiters. A listing cut
// short by the lister's own context is dropped, so the next create asks.
func (c *downloadsCache) settle(key string, entry *downloadsEntry, list []providers.RunnerDownload, expires time.Time, abandoned bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if abandoned {
		if c.byOwner[key] == entry {
			delete(c.byOwner, key)
		}
	} else {
		entry.ready, entry.downloads, entry.expires = true, list, expires
	}
	close(entry.done)
}

func (e *Engine) listRunnerDownloads(ctx context.Context, log *slog.Logger, owner github.Owner, key string, entry *downloadsEntry) []providers.RunnerDownload {
	lctx, cancel := context.WithTimeout(ctx, runnerDownloadsTimeout)
	downloads, err := e.github.RunnerDownloads(lctx, owner)
	cancel()
	if err != nil {
		abandoned := ctx.Err() != nil
		e.memory.downloads.settle(key, entry, nil, e.now().Add(runnerDownloadsRetry), abandoned)
		if !abandoned {
			log.Warn("listing the runner downloads failed; machines get no runner downloads until the next try (providers that bring their own runner still work)",
				"owner", owner.String(), "error", err, "retry_in", runnerDownloadsRetry.String())
		}
		return nil
	}
	list := ProviderRunnerDownloads(downloads)
	e.memory.downloads.settle(key, entry, list, e.now().Add(runnerDownloadsTTL), false)
	log.Debug("runner downloads listed", "owner", owner.String(), "count", len(list))
	return list
}

// ProviderRunnerDownloads is GitHub's list of runner downloads as a create
// request carries it. `runfleet provider check` offers the same list the
// engine does, so a provider that needs a download is checked as it runs.
func ProviderRunnerDownloads(downloads []github.RunnerDownload) []providers.RunnerDownload {
	list := make([]providers.RunnerDownload, 0, len(downloads))
	for _, d := range downloads {
		list = append(list, providers.RunnerDownload{
			OS:                d.OS,
			Architecture:      d.Architecture,
			DownloadURL:       d.DownloadURL,
			Filename:          d.Filename,
			SHA256Checksum:    d.SHA256Checksum,
			TempDownloadToken: d.TempDownloadToken,
		})
	}
	return list
}
