package cachetest

import (
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
)

// The storage SDK's transfer settings, as GitHub's client forces them for
// the cache service v2 (saveCacheV2, uploadCacheArchiveSDK): one Put Blob up
// to 128 MiB, above it 64 MiB blocks, 8 at a time, then a block list.
const (
	SDKSingleShot  = 128 << 20
	SDKBlockSize   = 64 << 20
	SDKConcurrency = 8
)

// BenchSizes are the archives `make bench-cache` moves; `make test` does
// not (they write gigabytes).
var BenchSizes = []struct {
	Name string
	N    int64
}{{"100MB", 100 << 20}, {"1GB", 1 << 30}}

// SDKBlockID is the storage SDK's block id: base64(<UUID><index, 12 digits>).
func SDKBlockID(i int) string {
	return base64.StdEncoding.EncodeToString(fmt.Appendf(nil, "0b0e4d2a-5c1f-4b6e-9a7d-3e2f1c0d9b8a%012d", i))
}

// BlockPath is the file SplitBlocks writes block i of archive to.
func BlockPath(archive string, i int) string { return fmt.Sprintf("%s.block-%d", archive, i) }

// SplitBlocks writes archive's SDK blocks to files of their own, which
// SDKUpload sends; a benchmark calls it before its timer.
func SplitBlocks(t testing.TB, archive string, size int64) {
	t.Helper()
	src, err := os.Open(archive)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	for i := 0; int64(i)*SDKBlockSize < size; i++ {
		dst, err := os.Create(BlockPath(archive, i))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.CopyN(dst, src, min(SDKBlockSize, size-int64(i)*SDKBlockSize)); err != nil {
			t.Fatal(err)
		}
		if err := dst.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// SDKUpload sends archive (size bytes) to the signed upload URL up as the
// storage SDK does: a Put Blob up to SDKSingleShot, above it Put Blocks,
// SDKConcurrency at a time, then the block list. The blocks are the files
// SplitBlocks wrote, each sent whole, so the transport sends them with
// sendfile as it does a Put Blob: the benchmark's client costs as little
// as it can. (A section of the archive would not do: the transport limits
// a body to its length again, and sendfile sees through one limit only.)
func SDKUpload(t testing.TB, c *http.Client, up, archive string, size int64) {
	t.Helper()
	put := func(u string, body io.Reader, n int64, hdr map[string]string) {
		req, err := http.NewRequest(http.MethodPut, u, body)
		if err != nil {
			t.Error(err)
			return
		}
		req.ContentLength = n
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Error(err)
			return
		}
		msg, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusCreated {
			t.Errorf("PUT: %s %s", resp.Status, msg)
		}
	}
	if size <= SDKSingleShot {
		f, err := os.Open(archive)
		if err != nil {
			t.Fatal(err)
		}
		put(up, f, size, map[string]string{"x-ms-blob-type": "BlockBlob"})
		return
	}
	sep := "?"
	if strings.Contains(up, "?") {
		sep = "&"
	}
	n := EachBlock(size, func(i int, _, m int64) {
		f, err := os.Open(BlockPath(archive, i))
		if err != nil {
			t.Error(err)
			return
		}
		put(up+sep+"comp=block&blockid="+SDKBlockID(i), f, m, nil)
	})
	var list strings.Builder
	list.WriteString(`<?xml version="1.0" encoding="UTF-8" standalone="yes"?><BlockList>`)
	for i := range n {
		list.WriteString("<Latest>" + SDKBlockID(i) + "</Latest>")
	}
	list.WriteString("</BlockList>")
	put(up+sep+"comp=blocklist", strings.NewReader(list.String()), int64(list.Len()), nil)
}

// EachBlock calls send for each of the SDK's blocks of an archive of size
// bytes (its index, offset and length), SDKConcurrency at a time, as the
// SDK sends them, and returns how many there are once all are done.
func EachBlock(size int64, send func(i int, off, n int64)) int {
	n := int((size + SDKBlockSize - 1) / SDKBlockSize)
	sem := make(chan struct{}, SDKConcurrency)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			off := int64(i) * SDKBlockSize
			send(i, off, min(SDKBlockSize, size-off))
		}()
	}
	wg.Wait()
	return n
}
