package bolt

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	bbolt "go.etcd.io/bbolt"
)

// RestoreFile makes the backup at backup the store file at path, for a
// serve that is stopped: it checks the backup, refuses while a process
// holds the current file, and swaps the copy in with a rename, keeping
// the file it replaces beside it (returned; "" when there was none) so a
// wrong restore can be undone.
func RestoreFile(backup, path string) (kept string, err error) {
	if err := CheckFile(backup); err != nil {
		return "", fmt.Errorf("not restoring %s: %w", backup, err)
	}
	if _, err := os.Stat(path); err == nil {
		// A shared lock cannot be had while serve holds its exclusive one.
		current, err := bbolt.Open(path, 0o600, &bbolt.Options{ReadOnly: true, Timeout: 100 * time.Millisecond})
		if err != nil {
			return "", fmt.Errorf("%s is in use (stop runfleet serve first): %w", path, err)
		}
		defer current.Close()
		kept = fmt.Sprintf("%s.before-restore-%s", path, time.Now().UTC().Format("20060102T150405Z"))
	}
	tmp := path + ".restoring"
	if err := copyFileSynced(backup, tmp); err != nil {
		return "", err
	}
	if kept != "" {
		if err := os.Rename(path, kept); err != nil {
			_ = os.Remove(tmp)
			return "", err
		}
	}
	if err := os.Rename(tmp, path); err != nil {
		return kept, err
	}
	return kept, syncDir(filepath.Dir(path))
}

// copyFileSynced copies src to dst (mode 0600) and fsyncs it, so a crash
// after the rename that follows never leaves a short file.
func copyFileSynced(src, dst string) (err error) {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	if err := os.MkdirAll(filepath.Dir(dst), 0o700); err != nil {
		return err
	}
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := out.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			_ = os.Remove(dst)
		}
	}()
	if _, err := io.Copy(out, in); err != nil {
		return err
	}
	return out.Sync()
}

// syncDir makes renames in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
