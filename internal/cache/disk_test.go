package cache

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/runfleet/runfleet/internal/testclock"
)

func openTestDisk(t *testing.T, p EvictionPolicy) (*Disk, *testclock.Clock, string) {
	t.Helper()
	clock := testclock.At(time.Date(2026, 12, 7, 4, 0, 0, 0, time.UTC))
	dir := t.TempDir()
	d, err := OpenDisk(dir, p, clock.Now, nil)
	if err != nil {
		t.Fatal(err)
	}
	return d, clock, dir
}

func readAll(t *testing.T, d *Disk, id int64) string {
	t.Helper()
	rc, size, err := d.Open(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	var buf bytes.Buffer
	if _, err := io.Copy(&buf, rc); err != nil {
		t.Fatal(err)
	}
	if int64(buf.Len()) != size {
		t.Fatalf("read %d bytes, size says %d", buf.Len(), size)
	}
	return buf.String()
}

func TestDiskBlocksAndReopen(t *testing.T) {
	ctx := context.Background()
	d, _, dir := openTestDisk(t, EvictionPolicy{})
	ref := Ref{RepoID: 1, Scope: "refs/heads/main", Key: "k", Version: "v"}
	e, err := d.Reserve(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Reserve(ctx, ref); !errors.Is(err, ErrExists) {
		t.Fatalf("second reserve: %v, want ErrExists", err)
	}
	// Staged out of order, one staged twice (a retry), one never committed.
	for _, b := range []struct{ id, data string }{{"b2", "world"}, {"b1", "hello "}, {"b2", "there"}, {"bx", "junk"}} {
		if _, err := d.PutBlock(ctx, e.ID, b.id, strings.NewReader(b.data), -1, 100); err != nil {
			t.Fatal(err)
		}
	}
	if err := d.CommitBlocks(ctx, e.ID, []string{"b1", "nope"}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("commit of an unstaged block: %v", err)
	}
	if err := d.CommitBlocks(ctx, e.ID, []string{"b1", "b2"}); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := d.Lookup(ctx, 1, []string{"refs/heads/main"}, []string{"k"}, "v"); ok {
		t.Fatal("a pending entry was found")
	}
	if _, err := d.Finalize(ctx, ref, 7); !errors.Is(err, ErrInvalid) {
		t.Fatalf("finalize with a wrong size: %v", err)
	}
	if _, err := d.Finalize(ctx, ref, 11); err != nil {
		t.Fatal(err)
	}
	if _, err := d.PutBlob(ctx, e.ID, strings.NewReader("x"), -1, 10); !errors.Is(err, ErrNotPending) {
		t.Fatalf("upload to a finalized entry: %v", err)
	}
	if got := readAll(t, d, e.ID); got != "hello there" {
		t.Fatalf("archive = %q", got)
	}
	if st := d.Stats(); st.Entries != 1 || st.Bytes != 11 {
		t.Fatalf("stats = %+v", st)
	}

	d2, err := OpenDisk(dir, EvictionPolicy{}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	got, ok, err := d2.Lookup(ctx, 1, []string{"refs/heads/main"}, []string{"k"}, "v")
	if err != nil || !ok || got.ID != e.ID {
		t.Fatalf("after reopen: %+v %v %v", got, ok, err)
	}
	if s := readAll(t, d2, e.ID); s != "hello there" {
		t.Fatalf("after reopen: %q", s)
	}
}

func TestDiskLimitsAndEviction(t *testing.T) {
	ctx := context.Background()
	d, clock, _ := openTestDisk(t, EvictionPolicy{MaxAge: 24 * time.Hour, MaxBytes: 10, PendingTTL: time.Hour})
	ref := Ref{RepoID: 1, Scope: "refs/heads/main", Key: "big", Version: "v"}
	e, err := d.Reserve(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.PutBlob(ctx, e.ID, strings.NewReader("0123456789x"), -1, 10); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("oversize blob: %v", err)
	}
	// Blocks add up: two of 6 bytes are over a 10-byte entry.
	if _, err := d.PutBlock(ctx, e.ID, "b1", strings.NewReader("012345"), -1, 10); err != nil {
		t.Fatal(err)
	}
	if _, err := d.PutBlock(ctx, e.ID, "b2", strings.NewReader("012345"), -1, 10); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("blocks over the entry's limit: %v", err)
	}
	// The same block again replaces itself and fits.
	if _, err := d.PutBlock(ctx, e.ID, "b1", strings.NewReader("0123456"), -1, 10); err != nil {
		t.Fatal(err)
	}
	// The abandoned reservation blocks the key until its upload is stale.
	if _, err := d.Reserve(ctx, ref); !errors.Is(err, ErrExists) {
		t.Fatalf("reserve during upload: %v", err)
	}
	clock.Advance(time.Hour)
	e, err = d.Reserve(ctx, ref)
	if err != nil {
		t.Fatalf("reserve after the upload went stale: %v", err)
	}
	if _, err := d.PutBlob(ctx, e.ID, strings.NewReader("123456"), -1, 10); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Finalize(ctx, ref, 6); err != nil {
		t.Fatal(err)
	}
	ref2 := Ref{RepoID: 1, Scope: "refs/heads/main", Key: "newer", Version: "v"}
	clock.Advance(time.Minute)
	e2, _ := d.Reserve(ctx, ref2)
	if _, err := d.PutBlob(ctx, e2.ID, strings.NewReader("abcdef"), -1, 10); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Finalize(ctx, ref2, 6); err != nil {
		t.Fatal(err)
	}
	st, err := d.Evict(ctx)
	if err != nil || st.Entries != 1 || st.Bytes != 6 {
		t.Fatalf("evict over size = %+v %v", st, err)
	}
	if _, _, err := d.Open(ctx, e.ID); !errors.Is(err, ErrNotFound) {
		t.Fatalf("the older entry should be gone: %v", err)
	}
	clock.Advance(24 * time.Hour)
	if st, _ := d.Evict(ctx); st.Entries != 1 {
		t.Fatalf("evict by age = %+v", st)
	}
	if st := d.Stats(); st.Entries != 0 {
		t.Fatalf("stats after eviction = %+v", st)
	}
}

// A reservation that crashed before its meta file was written is dropped
// when the store opens; what is not an entry's directory is left alone.
func TestDiskOpenDropsBrokenEntries(t *testing.T) {
	dir := t.TempDir()
	for _, d := range []string{"123", "lost+found"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "456"), []byte("not a directory"), 0o600); err != nil {
		t.Fatal(err)
	}
	d, err := OpenDisk(dir, EvictionPolicy{}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if st := d.Stats(); st.Entries != 0 {
		t.Fatalf("stats = %+v", st)
	}
	if _, err := os.Stat(filepath.Join(dir, "123")); !os.IsNotExist(err) {
		t.Fatalf("the broken entry is still there: %v", err)
	}
	for _, keep := range []string{"lost+found", "456"} {
		if _, err := os.Stat(filepath.Join(dir, keep)); err != nil {
			t.Fatalf("%s was removed: %v", keep, err)
		}
	}
}
