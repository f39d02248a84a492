package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/runfleet/runfleet/internal/config"
	"github.com/runfleet/runfleet/internal/serve"
	"github.com/runfleet/runfleet/internal/store/bolt"
)

const backupDescription = `Copies a running server's store (store.kind bolt: records and work queue,
one file) into FILE while it keeps serving: the copy is one consistent
moment of the store, written to FILE.partial, checked page by page and
then renamed to FILE, so FILE is always a whole backup. Needs the operator
API token. Restore it with 'runfleet restore'.`

const restoreDescription = `Makes the backup FILE the store of a stopped server: checks FILE, refuses
while a runfleet serve holds DIR/state.db, and swaps FILE in, keeping the
file it replaces as state.db.before-restore-<time> beside it. Start
runfleet serve afterwards; its reconciler then compares the restored
records with GitHub and the provider (docs/embedded-mode.md).`

func (c *cli) backup(ctx context.Context, args []string) int {
	fs := c.newFlags("backup", "runfleet backup FILE [--server URL] [--token TOKEN] [-o table|json]", backupDescription)
	var a apiFlags
	a.register(fs, c)
	positional, status, done := parse(fs, args)
	if done {
		return status
	}
	if len(positional) != 1 {
		return c.usageError(fs, "want exactly one FILE to write the backup to, got %d arguments", len(positional))
	}
	client, err := a.client(c)
	if err != nil {
		return c.usageError(fs, "%v", err)
	}
	path := positional[0]
	partial := path + ".partial"
	f, err := os.OpenFile(partial, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return c.fail(err)
	}
	n, err := client.Backup(ctx, f)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = bolt.CheckFile(partial)
	}
	if err == nil {
		err = os.Rename(partial, path)
	}
	if err != nil {
		_ = os.Remove(partial)
		return c.apiFail(err)
	}
	if a.json {
		return c.printJSON(map[string]any{"file": path, "bytes": n})
	}
	fmt.Fprintf(c.stdout, "backup: %s (%d bytes, checked)\n", path, n)
	return exitOK
}

func (c *cli) restore(args []string) int {
	fs := c.newFlags("restore", "runfleet restore FILE [--store-dir DIR] [-o table|json]", restoreDescription)
	dir := fs.String("store-dir", "", "the stopped server's store.dir (e.g. /var/lib/runfleet; default "+config.DefaultStoreDir+")")
	var asJSON bool
	addOutputFlags(fs, &asJSON)
	positional, status, done := parse(fs, args)
	if done {
		return status
	}
	if len(positional) != 1 {
		return c.usageError(fs, "want exactly one backup FILE, got %d arguments", len(positional))
	}
	if *dir == "" {
		*dir = config.DefaultStoreDir
	}
	target := filepath.Join(*dir, serve.StateFile)
	kept, err := bolt.RestoreFile(positional[0], target)
	if err != nil {
		return c.fail(err)
	}
	if asJSON {
		// "replaced_file" is "" when there was no store to replace.
		return c.printJSON(map[string]any{"file": positional[0], "store_file": target, "replaced_file": kept})
	}
	fmt.Fprintf(c.stdout, "restored %s to %s\n", positional[0], target)
	if kept != "" {
		fmt.Fprintf(c.stdout, "the file it replaced is kept as %s\n", kept)
	}
	return exitOK
}
