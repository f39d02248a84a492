package main

import (
	"archive/tar"
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// One binary gives one image: the same digests however often it is
// written, so a release's image can be rebuilt and compared. The archive
// holds exactly the layout's files.
func TestImageIsReproducibleAndTheArchiveHoldsTheLayout(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "runfleet")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\necho not really runfleet\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	o := options{
		version: "v1.0.0", created: time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC), caBundle: []byte("bundle"),
		targets: []target{
			{platform: platform{OS: "linux", Architecture: "amd64"}, binary: bin},
			{platform: platform{OS: "linux", Architecture: "arm64", Variant: "v8"}, binary: bin},
		},
	}
	var indexes [2][]byte
	for i := range indexes {
		o.out = filepath.Join(dir, "layout", string(rune('a'+i)))
		if err := writeLayout(o); err != nil {
			t.Fatal(err)
		}
		data, err := os.ReadFile(filepath.Join(o.out, "index.json"))
		if err != nil {
			t.Fatal(err)
		}
		indexes[i] = data
	}
	if string(indexes[0]) != string(indexes[1]) {
		t.Errorf("two writes of one image differ:\n%s\n%s", indexes[0], indexes[1])
	}

	archive := filepath.Join(dir, "image.tar")
	if err := writeArchive(o.out, archive, o.created); err != nil {
		t.Fatal(err)
	}
	var inLayout, inArchive []string
	err := filepath.WalkDir(o.out, func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			rel, _ := filepath.Rel(o.out, path)
			inLayout = append(inLayout, filepath.ToSlash(rel))
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(archive)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tr := tar.NewReader(f)
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if hdr.Typeflag == tar.TypeReg {
			inArchive = append(inArchive, hdr.Name)
		}
	}
	slices.Sort(inLayout)
	slices.Sort(inArchive)
	if !slices.Equal(inLayout, inArchive) || !slices.Contains(inArchive, "index.json") || !slices.Contains(inArchive, "oci-layout") {
		t.Errorf("archive holds %v, layout %v", inArchive, inLayout)
	}
	// Each platform's layer, config and manifest, the multi-platform
	// index, index.json and oci-layout: the arm64 image shares the layer
	// (same binary here) but not the config.
	if len(inLayout) < 7 {
		t.Errorf("layout has %d files: %v", len(inLayout), inLayout)
	}
}
