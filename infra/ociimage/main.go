// Command ociimage writes runfleet's container image without a container
// engine: `make image` runs it on the static release binaries. It writes
// an OCI image layout (blobs, index.json, oci-layout) holding one image
// per platform under a multi-platform index, and the same as one tar.
//
//	go run ./infra/ociimage -version v1.2.3 -out bin/image/runfleet-oci \
//	  -archive bin/image/runfleet-oci.tar linux/amd64=bin/release/runfleet-linux-amd64
//
// Each image is one layer: the binary, a CA bundle, a non-root user and its
// state directory; see rootfs.go. Nothing else runs in the container, so
// nothing else is in it.
package main

import (
	"flag"
	"fmt"
	"os"
	"time"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "ociimage:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("ociimage", flag.ContinueOnError)
	version := fs.String("version", "", "the image's tag and version label (required)")
	revision := fs.String("revision", "", "the commit it is built from")
	created := fs.String("created", "", "creation time, RFC 3339 (default: the Unix epoch, for reproducible images)")
	caBundle := fs.String("ca-bundle", "/etc/ssl/certs/ca-certificates.crt", "PEM bundle of the CA certificates the image trusts")
	out := fs.String("out", "", "OCI layout directory to create (required; must not exist)")
	archive := fs.String("archive", "", "also write the layout as this tar file")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *version == "" || *out == "" || fs.NArg() == 0 {
		return fmt.Errorf("usage: ociimage -version V -out DIR [-archive FILE] [-ca-bundle FILE] OS/ARCH=BINARY…")
	}
	o := options{version: *version, revision: *revision, out: *out, created: time.Unix(0, 0).UTC()}
	if *created != "" {
		t, err := time.Parse(time.RFC3339, *created)
		if err != nil {
			return fmt.Errorf("-created: %w", err)
		}
		o.created = t
	}
	bundle, err := os.ReadFile(*caBundle)
	if err != nil {
		return fmt.Errorf("CA bundle (Debian: apt-get install ca-certificates): %w", err)
	}
	o.caBundle = bundle
	for _, a := range fs.Args() {
		t, err := parseTarget(a)
		if err != nil {
			return err
		}
		o.targets = append(o.targets, t)
	}
	if _, err := os.Stat(*out); err == nil {
		return fmt.Errorf("%s exists; remove it first", *out)
	}
	if err := writeLayout(o); err != nil {
		return err
	}
	fmt.Printf("image %s: OCI layout %s\n", *version, *out)
	if *archive != "" {
		if err := writeArchive(*out, *archive, o.created); err != nil {
			return err
		}
		fmt.Printf("image %s: archive %s\n", *version, *archive)
	}
	return nil
}
