package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"time"
)

// The image's one user. 65532 is the uid distroless images call "nonroot":
// a number no distribution gives a real account, so files it owns on a
// mounted volume never belong to someone on the host by accident.
const (
	imageUID  = 65532
	imageUser = "runfleet"
)

// Paths inside the image.
const (
	binaryPath   = "/usr/local/bin/runfleet"
	caBundlePath = "/etc/ssl/certs/ca-certificates.crt"
	stateDir     = "/var/lib/runfleet"
	configDir    = "/etc/runfleet"
)

// entry is one file or directory of the root filesystem.
type entry struct {
	name string // without a leading slash
	mode int64
	uid  int
	data []byte // nil for a directory
}

// rootfs lists the image's whole filesystem: the binary, the CA bundle
// (runfleet calls GitHub and cloud APIs over TLS, and a static binary has
// no other trust store), an /etc/passwd that names the user (some tools
// print names, and Go's os/user reads it), a writable state directory the
// user owns, and /tmp. Parents come before children, as tar readers expect.
func rootfs(binary, caBundle []byte) []entry {
	passwd := fmt.Sprintf("root:x:0:0:root:/root:/sbin/nologin\n%s:x:%d:%d:runfleet:%s:/sbin/nologin\n", imageUser, imageUID, imageUID, stateDir)
	group := fmt.Sprintf("root:x:0:\n%s:x:%d:\n", imageUser, imageUID)
	dir := func(name string, mode int64) entry { return entry{name: name, mode: mode} }
	file := func(name string, mode int64, data []byte) entry { return entry{name: name, mode: mode, data: data} }
	state := dir("var/lib/runfleet/", 0o700)
	state.uid = imageUID
	return []entry{
		dir("etc/", 0o755),
		file("etc/group", 0o644, []byte(group)),
		// Go's resolver reads it to decide between /etc/hosts and DNS.
		file("etc/nsswitch.conf", 0o644, []byte("hosts: files dns\n")),
		file("etc/passwd", 0o644, []byte(passwd)),
		dir("etc/runfleet/", 0o755),
		dir("etc/ssl/", 0o755),
		dir("etc/ssl/certs/", 0o755),
		file("etc/ssl/certs/ca-certificates.crt", 0o644, caBundle),
		dir("tmp/", 0o1777),
		dir("usr/", 0o755),
		dir("usr/local/", 0o755),
		dir("usr/local/bin/", 0o755),
		file("usr/local/bin/runfleet", 0o755, binary),
		dir("var/", 0o755),
		dir("var/lib/", 0o755),
		state,
	}
}

// layer is one gzipped tar layer: the compressed bytes (the blob) and the
// digest of the uncompressed tar (the config's diff_id).
type layer struct {
	blob   []byte
	diffID string
}

// buildLayer writes the entries as a tar with every time set to mtime and
// no user or host detail, gzipped without a name or time, so one binary
// and bundle always give the same bytes and the same digests.
func buildLayer(entries []entry, mtime time.Time) (layer, error) {
	var tarBuf bytes.Buffer
	tw := tar.NewWriter(&tarBuf)
	for _, e := range entries {
		hdr := &tar.Header{
			Name: e.name, Mode: e.mode, Uid: e.uid, Gid: e.uid,
			ModTime: mtime,
		}
		if e.data == nil {
			hdr.Typeflag = tar.TypeDir
		} else {
			hdr.Typeflag = tar.TypeReg
			hdr.Size = int64(len(e.data))
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return layer{}, fmt.Errorf("layer: %s: %w", e.name, err)
		}
		if _, err := tw.Write(e.data); err != nil {
			return layer{}, fmt.Errorf("layer: %s: %w", e.name, err)
		}
	}
	if err := tw.Close(); err != nil {
		return layer{}, err
	}
	sum := sha256.Sum256(tarBuf.Bytes())

	var gz bytes.Buffer
	zw, err := gzip.NewWriterLevel(&gz, gzip.BestCompression)
	if err != nil {
		return layer{}, err
	}
	if _, err := io.Copy(zw, &tarBuf); err != nil {
		return layer{}, err
	}
	if err := zw.Close(); err != nil {
		return layer{}, err
	}
	return layer{blob: gz.Bytes(), diffID: "sha256:" + hex.EncodeToString(sum[:])}, nil
}
