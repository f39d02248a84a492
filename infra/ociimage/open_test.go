package main

import (
	"archive/tar"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// openedImage is one platform's image as a runtime sees it, read back from
// an OCI layout by following index.json's digests, each checked.
type openedImage struct {
	refName string
	config  imageConfig
	headers map[string]*tar.Header // the layer's entries by path, no leading slash
	rootfs  string                 // the layer unpacked
}

// openLayout reads the image for os/arch from the layout at dir and
// unpacks its layer into a temporary directory.
func openLayout(t *testing.T, dir, os_, arch string) openedImage {
	t.Helper()
	var top index
	readJSON(t, filepath.Join(dir, "index.json"), &top)
	if len(top.Manifests) != 1 || top.Manifests[0].MediaType != mediaTypeIndex {
		t.Fatalf("index.json: want one multi-platform index, got %+v", top.Manifests)
	}
	img := openedImage{refName: top.Manifests[0].Annotations[annotationRefName]}
	var multi index
	readBlobJSON(t, dir, top.Manifests[0], &multi)
	var found *descriptor
	for i, d := range multi.Manifests {
		if d.Platform != nil && d.Platform.OS == os_ && d.Platform.Architecture == arch {
			found = &multi.Manifests[i]
		}
	}
	if found == nil {
		t.Fatalf("no manifest for %s/%s in %+v", os_, arch, multi.Manifests)
	}
	var m manifest
	readBlobJSON(t, dir, *found, &m)
	readBlobJSON(t, dir, m.Config, &img.config)
	if len(m.Layers) != 1 || m.Layers[0].MediaType != mediaTypeLayer {
		t.Fatalf("layers %+v, want one gzipped tar", m.Layers)
	}
	if img.config.OS != os_ || img.config.Architecture != arch {
		t.Errorf("config is for %s/%s, its manifest for %s/%s", img.config.OS, img.config.Architecture, os_, arch)
	}
	img.rootfs = t.TempDir()
	diffID := unpack(t, readBlob(t, dir, m.Layers[0]), img.rootfs, &img.headers)
	if want := img.config.RootFS.DiffIDs; len(want) != 1 || want[0] != diffID {
		t.Errorf("layer's uncompressed digest %s, config's diff_ids %v", diffID, want)
	}
	return img
}

func readJSON(t *testing.T, path string, v any) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// readBlob returns a blob after checking its size and digest against the
// descriptor that named it.
func readBlob(t *testing.T, dir string, d descriptor) []byte {
	t.Helper()
	hexSum, ok := strings.CutPrefix(d.Digest, "sha256:")
	if !ok {
		t.Fatalf("digest %q is not sha256", d.Digest)
	}
	data, err := os.ReadFile(filepath.Join(dir, "blobs", "sha256", hexSum))
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	if hex.EncodeToString(sum[:]) != hexSum || int64(len(data)) != d.Size {
		t.Fatalf("blob %s: content does not match its descriptor (size %d, want %d)", d.Digest, len(data), d.Size)
	}
	return data
}

func readBlobJSON(t *testing.T, dir string, d descriptor, v any) {
	t.Helper()
	if err := json.Unmarshal(readBlob(t, dir, d), v); err != nil {
		t.Fatalf("blob %s (%s): %v", d.Digest, d.MediaType, err)
	}
}

// unpack extracts a gzipped tar layer into root and returns the digest of
// the uncompressed tar. No entry may leave root.
func unpack(t *testing.T, blob []byte, root string, headers *map[string]*tar.Header) string {
	t.Helper()
	zr, err := gzip.NewReader(strings.NewReader(string(blob)))
	if err != nil {
		t.Fatal(err)
	}
	h := sha256.New()
	tr := tar.NewReader(io.TeeReader(zr, h))
	*headers = map[string]*tar.Header{}
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		name := strings.TrimSuffix(hdr.Name, "/")
		if !filepath.IsLocal(name) {
			t.Fatalf("layer entry %q leaves the root", hdr.Name)
		}
		(*headers)[name] = hdr
		path := filepath.Join(root, name)
		switch hdr.Typeflag {
		case tar.TypeDir:
			err = os.MkdirAll(path, 0o755)
		case tar.TypeReg:
			var data []byte
			if data, err = io.ReadAll(tr); err == nil {
				err = os.WriteFile(path, data, os.FileMode(hdr.Mode)&0o777)
			}
		default:
			err = fmt.Errorf("unexpected entry type %c", hdr.Typeflag)
		}
		if err != nil {
			t.Fatalf("%s: %v", hdr.Name, err)
		}
	}
	// The tar's end-of-archive padding counts towards the digest too.
	if _, err := io.Copy(io.Discard, io.TeeReader(zr, h)); err != nil {
		t.Fatal(err)
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}
