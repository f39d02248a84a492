package httpapi

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// BackupFunc writes a consistent copy of the store to w: what `runfleet
// backup` asks a running server for, since the store's file is locked by
// the server while it runs.
type BackupFunc func(w io.Writer) (int64, error)

// backup streams the copy. An error after the first byte cannot change
// the status any more; the client checks the copy it received, so a cut
// one is never taken for a backup.
func (a *api) backup(w http.ResponseWriter, r *http.Request) {
	if a.backupTo == nil {
		writeError(w, http.StatusNotImplemented, "this server's store cannot be backed up through runfleet (only store.kind bolt can); use the store's own backups")
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Content-Disposition", `attachment; filename="state.db"`)
	n, err := a.backupTo(w)
	if err != nil {
		a.log.ErrorContext(r.Context(), "backup failed", "error", err, "bytes_written", n)
		return
	}
	a.log.InfoContext(r.Context(), "backup written", "bytes", n)
}

// Backup copies the server's store into w and returns the bytes copied.
// It has no overall time limit (a large store takes what it takes); ctx
// bounds it.
func (c *Client) Backup(ctx context.Context, w io.Writer) (int64, error) {
	u := *c.base
	u.Path = strings.TrimRight(u.Path, "/") + Prefix + "backup"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return 0, err
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	hc := *c.http
	hc.Timeout = 0
	resp, err := hc.Do(req)
	if err != nil {
		return 0, fmt.Errorf("cannot reach runfleet at %s: %w", c.base.Redacted(), TransportCause(err))
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, maxAnswerBytes))
		return 0, answerError(resp.StatusCode, body)
	}
	n, err := io.Copy(w, resp.Body)
	if err != nil {
		return n, fmt.Errorf("backup cut off after %d bytes: %w", n, err)
	}
	return n, nil
}
