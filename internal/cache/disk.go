package cache

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"
)

// MaxBlockIDBytes is Azure's limit on a block id (before base64): the
// client's ids are far shorter; longer ones are refused, not stored.
const MaxBlockIDBytes = 64

// ErrTooLarge is an upload over the entry size limit.
var ErrTooLarge = errors.New("cache: upload is over the size limit")

// Disk is a Store on a local directory, for embedded mode. Each entry is a
// directory named by its id holding meta.json, its staged blocks and, once
// committed, parts.json: the ordered block files that make the archive.
// Committing blocks copies nothing — a download reads the parts in turn —
// so a 1 GB save costs one write of its bytes. The index lives in memory
// and is rebuilt from the meta files when the store opens.
type Disk struct {
	root   string
	policy EvictionPolicy
	now    func() time.Time
	log    *slog.Logger
	index
}

type diskMeta struct {
	Entry
	// Parts are the committed archive's files, in order.
	Parts []string `json:"parts,omitempty"`
	// Objects are an archive's parts in the bucket (the S3 store, when
	// the machine's agent uploaded them straight there).
	Objects []Part `json:"objects,omitempty"`
}

// OpenDisk opens (creating) a disk store in root with eviction policy p.
// now defaults to time.Now.
func OpenDisk(root string, p EvictionPolicy, now func() time.Time, log *slog.Logger) (*Disk, error) {
	if now == nil {
		now = time.Now
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if p.PendingTTL <= 0 {
		p.PendingTTL = time.Hour
	}
	if err := os.MkdirAll(root, 0o700); err != nil {
		return nil, fmt.Errorf("cache: open disk store: %w", err)
	}
	d := &Disk{root: root, policy: p, now: now, log: log, index: newIndex(now)}
	dirs, err := os.ReadDir(root)
	if err != nil {
		return nil, fmt.Errorf("cache: open disk store: %w", err)
	}
	for _, de := range dirs {
		id, err := strconv.ParseInt(de.Name(), 10, 64)
		if err != nil || !de.IsDir() {
			continue
		}
		m, err := d.readMeta(id)
		if err != nil {
			// A reservation that crashed before its meta was written:
			// nothing points at it, so it goes.
			log.Warn("cache: dropping an entry without readable metadata", "id", id, "err", err)
			_ = os.RemoveAll(d.dir(id))
			continue
		}
		d.addLocked(m.Entry)
	}
	return d, nil
}

func (d *Disk) dir(id int64) string { return filepath.Join(d.root, strconv.FormatInt(id, 10)) }

func (d *Disk) readMeta(id int64) (diskMeta, error) {
	var m diskMeta
	b, err := os.ReadFile(filepath.Join(d.dir(id), "meta.json"))
	if err != nil {
		return m, err
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return m, err
	}
	if m.ID != id {
		return m, fmt.Errorf("meta names id %d", m.ID)
	}
	return m, nil
}

// writeMeta replaces an entry's meta file atomically (temp file, rename),
// so a crash leaves the old or the new one, never half of either.
func (d *Disk) writeMeta(m diskMeta) error {
	b, err := json.Marshal(m)
	if err != nil {
		return err
	}
	tmp := filepath.Join(d.dir(m.ID), "meta.json.tmp")
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(d.dir(m.ID), "meta.json"))
}

func newID() (int64, error) {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return 0, err
	}
	// Positive and never 0: the client parses it as an integer id.
	return int64(binary.BigEndian.Uint64(b[:])>>1) | 1, nil
}

// Reserve implements Store.
func (d *Disk) Reserve(_ context.Context, ref Ref) (Entry, error) {
	now := d.now()
	d.mu.Lock()
	defer d.mu.Unlock()
	stale, err := d.admitLocked(ref, now, d.policy.PendingTTL)
	if err != nil {
		return Entry{}, err
	}
	if stale != 0 {
		// A stale reservation: its writer is gone; the new one replaces it.
		d.removeLocked(stale)
	}
	id, err := newID()
	if err != nil {
		return Entry{}, fmt.Errorf("cache: reserve: %w", err)
	}
	e := Entry{Ref: ref, ID: id, Created: now, LastAccess: now}
	if err := os.MkdirAll(d.dir(id), 0o700); err != nil {
		return Entry{}, fmt.Errorf("cache: reserve: %w", err)
	}
	if err := d.writeMeta(diskMeta{Entry: e}); err != nil {
		_ = os.RemoveAll(d.dir(id))
		return Entry{}, fmt.Errorf("cache: reserve: %w", err)
	}
	d.addLocked(e)
	return e, nil
}

// writeFile streams r into name inside entry id's directory, at most limit
// bytes, through a temp file renamed into place: a block PUT again (the
// SDK retries) replaces the first one whole.
func (d *Disk) writeFile(id int64, name string, r io.Reader, limit int64) (int64, error) {
	if err := d.pending(id); err != nil {
		return 0, err
	}
	f, err := os.CreateTemp(d.dir(id), name+".*.tmp")
	if err != nil {
		return 0, fmt.Errorf("cache: write %s: %w", name, err)
	}
	buf := copyBuffers.Get().(*[]byte)
	n, err := io.CopyBuffer(onlyWriter{f}, io.LimitReader(r, limit+1), *buf)
	copyBuffers.Put(buf)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil && n > limit {
		err = ErrTooLarge
	}
	// The limit is the entry's, not one block's: blocks staged so far
	// count, so many blocks cannot add up to more than one archive may be.
	// Concurrent blocks see each other's temp files, which errs on refusing.
	if err == nil && d.stagedBytes(id, name) > limit {
		err = ErrTooLarge
	}
	if err == nil {
		err = os.Rename(f.Name(), filepath.Join(d.dir(id), name))
	}
	if err != nil {
		_ = os.Remove(f.Name())
		if errors.Is(err, ErrTooLarge) {
			return n, err
		}
		return n, fmt.Errorf("cache: write %s: %w", name, err)
	}
	return n, nil
}

// stagedBytes sums entry id's files but its meta and the one name a new
// upload replaces.
func (d *Disk) stagedBytes(id int64, replacing string) int64 {
	des, err := os.ReadDir(d.dir(id))
	if err != nil {
		return 0
	}
	var total int64
	for _, de := range des {
		if n := de.Name(); n == "meta.json" || n == replacing {
			continue
		}
		if fi, err := de.Info(); err == nil && fi.Mode().IsRegular() {
			total += fi.Size()
		}
	}
	return total
}

// copyBuffers are the 1 MiB buffers uploads are copied through: io.Copy's
// 32 KiB costs four times the system calls on a gigabyte.
var copyBuffers = sync.Pool{New: func() any { b := make([]byte, 1<<20); return &b }}

// onlyWriter hides *os.File's ReadFrom so io.CopyBuffer uses the buffer.
type onlyWriter struct{ io.Writer }

func blockFile(blockID string) string { return "block-" + hex.EncodeToString([]byte(blockID)) }

func validBlockID(blockID string) error {
	if blockID == "" || len(blockID) > 2*MaxBlockIDBytes {
		return &InvalidError{Field: "blockid", Reason: "empty or too long"}
	}
	return nil
}

// PutBlob implements Store.
func (d *Disk) PutBlob(_ context.Context, id int64, r io.Reader, size, limit int64) (int64, error) {
	if size > limit {
		return 0, ErrTooLarge
	}
	n, err := d.writeFile(id, "blob", r, limit)
	if err != nil {
		return n, err
	}
	return n, d.setParts(id, []string{"blob"})
}

// PutBlock implements Store.
func (d *Disk) PutBlock(_ context.Context, id int64, blockID string, r io.Reader, size, limit int64) (int64, error) {
	if err := validBlockID(blockID); err != nil {
		return 0, err
	}
	if size > limit {
		return 0, ErrTooLarge
	}
	return d.writeFile(id, blockFile(blockID), r, limit)
}

// CommitBlocks implements Store.
func (d *Disk) CommitBlocks(_ context.Context, id int64, blockIDs []string) error {
	if len(blockIDs) == 0 {
		return &InvalidError{Field: "block list", Reason: "empty"}
	}
	parts := make([]string, 0, len(blockIDs))
	for _, b := range blockIDs {
		if err := validBlockID(b); err != nil {
			return err
		}
		name := blockFile(b)
		if _, err := os.Stat(filepath.Join(d.dir(id), name)); err != nil {
			return &InvalidError{Field: "block list", Reason: "names a block that was not staged"}
		}
		parts = append(parts, name)
	}
	return d.setParts(id, parts)
}

func (d *Disk) setParts(id int64, parts []string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	e, err := d.pendingLocked(id)
	if err != nil {
		return err
	}
	return d.writeMeta(diskMeta{Entry: *e, Parts: parts})
}

// Finalize implements Store.
func (d *Disk) Finalize(_ context.Context, ref Ref, size int64) (Entry, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	var parts []string
	e, err := d.finalizeLocked(ref, size, d.now(), d.readMeta, func(id int64, m diskMeta) (int64, error) {
		var total int64
		for _, p := range m.Parts {
			fi, err := os.Stat(filepath.Join(d.dir(id), p))
			if err != nil {
				return 0, err
			}
			total += fi.Size()
		}
		parts = m.Parts
		return total, nil
	}, d.writeMeta)
	if err != nil {
		return Entry{}, err
	}
	d.dropUncommitted(e.ID, parts)
	return e, nil
}

// dropUncommitted removes staged blocks the commit left out (Azure drops
// them too); errors only leave garbage inside the entry's own directory.
func (d *Disk) dropUncommitted(id int64, parts []string) {
	keep := map[string]bool{"meta.json": true}
	for _, p := range parts {
		keep[p] = true
	}
	des, err := os.ReadDir(d.dir(id))
	if err != nil {
		return
	}
	for _, de := range des {
		if !keep[de.Name()] {
			_ = os.Remove(filepath.Join(d.dir(id), de.Name()))
		}
	}
}

// Open implements Store.
func (d *Disk) Open(_ context.Context, id int64) (io.ReadCloser, int64, error) {
	e, ok := d.finalized(id)
	if !ok {
		return nil, 0, ErrNotFound
	}
	size := e.Size
	m, err := d.readMeta(id)
	if err != nil {
		return nil, 0, ErrNotFound
	}
	files := make([]string, len(m.Parts))
	for i, p := range m.Parts {
		files[i] = filepath.Join(d.dir(id), p)
	}
	return &partsReader{files: files}, size, nil
}

// partsReader reads files one after the other, opening each only when the
// previous one is done, so a download holds one descriptor at a time.
// An eviction while it reads makes the next open fail: a short download,
// which the client's length check catches.
type partsReader struct {
	files []string
	cur   *os.File
}

func (p *partsReader) Read(b []byte) (int, error) {
	for {
		if p.cur == nil {
			if len(p.files) == 0 {
				return 0, io.EOF
			}
			f, err := os.Open(p.files[0])
			if err != nil {
				return 0, err
			}
			p.cur, p.files = f, p.files[1:]
		}
		n, err := p.cur.Read(b)
		if err == io.EOF {
			_ = p.cur.Close()
			p.cur = nil
			if n > 0 {
				return n, nil
			}
			continue
		}
		return n, err
	}
}

// WriteTo lets io.Copy hand each file to the destination whole, so a
// download to a socket can use sendfile.
func (p *partsReader) WriteTo(w io.Writer) (int64, error) {
	var total int64
	for p.cur != nil || len(p.files) > 0 {
		if p.cur == nil {
			f, err := os.Open(p.files[0])
			if err != nil {
				return total, err
			}
			p.cur, p.files = f, p.files[1:]
		}
		n, err := io.Copy(w, p.cur)
		total += n
		_ = p.cur.Close()
		p.cur = nil
		if err != nil {
			return total, err
		}
	}
	return total, nil
}

func (p *partsReader) Close() error {
	if p.cur != nil {
		err := p.cur.Close()
		p.cur = nil
		return err
	}
	return nil
}

// removeLocked forgets and deletes entry id; d.mu is held.
func (d *Disk) removeLocked(id int64) {
	if _, ok := d.forgetLocked(id); ok {
		d.removeFiles(id)
	}
}

func (d *Disk) removeFiles(id int64) {
	if err := os.RemoveAll(d.dir(id)); err != nil {
		d.log.Warn("cache: could not remove an evicted entry's files", "id", id, "err", err)
	}
}

// Evict implements Store.
func (d *Disk) Evict(_ context.Context) (EvictStats, error) {
	gone, st := d.evict(d.now(), d.policy)
	for _, e := range gone {
		d.removeFiles(e.ID)
	}
	if st.Entries > 0 {
		d.log.Info("cache: evicted", "entries", st.Entries, "bytes", st.Bytes)
	}
	return st, nil
}

var _ Store = (*Disk)(nil)
