package main

import (
	"archive/tar"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// writeArchive packs the layout directory into one uncompressed tar (an
// "oci-archive": what `podman load`, `docker load` (Docker 25 or later) and
// `skopeo copy oci-archive:FILE` read). The blobs are already compressed.
// Entries are in lexical order with one time, so the archive is as
// reproducible as the layout.
func writeArchive(layoutDir, archive string, mtime time.Time) (err error) {
	f, err := os.Create(archive)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}()
	tw := tar.NewWriter(f)
	err = filepath.WalkDir(layoutDir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || path == layoutDir {
			return err
		}
		rel, err := filepath.Rel(layoutDir, path)
		if err != nil {
			return err
		}
		hdr := &tar.Header{Name: filepath.ToSlash(rel), ModTime: mtime, Mode: 0o644, Typeflag: tar.TypeReg}
		if d.IsDir() {
			hdr.Name += "/"
			hdr.Mode, hdr.Typeflag = 0o755, tar.TypeDir
			return tw.WriteHeader(hdr)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		hdr.Size = int64(len(data))
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		_, err = tw.Write(data)
		return err
	})
	if err != nil {
		return err
	}
	return tw.Close()
}
