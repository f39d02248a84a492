package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// target is one platform's binary.
type target struct {
	platform platform
	binary   string // path of a static runfleet built for it
}

// options say what image to write.
type options struct {
	version  string // the ref name (tag) and the version label
	revision string // the commit, for the revision label
	created  time.Time
	caBundle []byte
	targets  []target
	out      string // the OCI layout directory to create
}

// layoutWriter puts blobs into an OCI layout directory by digest.
type layoutWriter struct{ dir string }

func (w layoutWriter) blob(mediaType string, data []byte) (descriptor, error) {
	sum := sha256.Sum256(data)
	hexSum := hex.EncodeToString(sum[:])
	path := filepath.Join(w.dir, "blobs", "sha256", hexSum)
	if err := os.WriteFile(path, data, 0o644); err != nil {
		return descriptor{}, err
	}
	return descriptor{MediaType: mediaType, Digest: "sha256:" + hexSum, Size: int64(len(data))}, nil
}

func (w layoutWriter) json(mediaType string, v any) (descriptor, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return descriptor{}, err
	}
	return w.blob(mediaType, data)
}

// writeLayout writes the image as an OCI layout: one manifest per platform
// under a multi-platform index, which index.json names by version, so a
// runtime pulls the manifest of its own platform.
func writeLayout(o options) error {
	w := layoutWriter{dir: o.out}
	if err := os.MkdirAll(filepath.Join(o.out, "blobs", "sha256"), 0o755); err != nil {
		return err
	}
	var platforms []descriptor
	for _, t := range o.targets {
		d, err := w.platformImage(o, t)
		if err != nil {
			return fmt.Errorf("%s/%s: %w", t.platform.OS, t.platform.Architecture, err)
		}
		platforms = append(platforms, d)
	}
	multi, err := w.json(mediaTypeIndex, index{SchemaVersion: 2, MediaType: mediaTypeIndex, Manifests: platforms, Annotations: imageAnnotations(o)})
	if err != nil {
		return err
	}
	multi.Annotations = map[string]string{annotationRefName: o.version}
	top, err := json.MarshalIndent(index{SchemaVersion: 2, MediaType: mediaTypeIndex, Manifests: []descriptor{multi}}, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(o.out, "index.json"), append(top, '\n'), 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(o.out, "oci-layout"), []byte(`{"imageLayoutVersion":"1.0.0"}`+"\n"), 0o644)
}

// platformImage writes one platform's layer, config and manifest.
func (w layoutWriter) platformImage(o options, t target) (descriptor, error) {
	binary, err := os.ReadFile(t.binary)
	if err != nil {
		return descriptor{}, err
	}
	l, err := buildLayer(rootfs(binary, o.caBundle), o.created)
	if err != nil {
		return descriptor{}, err
	}
	layerDesc, err := w.blob(mediaTypeLayer, l.blob)
	if err != nil {
		return descriptor{}, err
	}
	cfg := imageConfig{
		Created: o.created.UTC().Format(time.RFC3339), Architecture: t.platform.Architecture,
		OS: t.platform.OS, Variant: t.platform.Variant, Config: runtimeSettings(o),
		History: []history{{Created: o.created.UTC().Format(time.RFC3339), CreatedBy: "make image (infra/ociimage)", Comment: "runfleet " + o.version}},
	}
	cfg.RootFS.Type = "layers"
	cfg.RootFS.DiffIDs = []string{l.diffID}
	cfgDesc, err := w.json(mediaTypeConfig, cfg)
	if err != nil {
		return descriptor{}, err
	}
	d, err := w.json(mediaTypeManifest, manifest{
		SchemaVersion: 2, MediaType: mediaTypeManifest, Config: cfgDesc,
		Layers: []descriptor{layerDesc}, Annotations: imageAnnotations(o),
	})
	if err != nil {
		return descriptor{}, err
	}
	p := t.platform
	d.Platform = &p
	return d, nil
}

// runtimeSettings is how the container runs: as the unprivileged user,
// `runfleet serve` by default (any other command replaces "serve": `docker
// run IMAGE version`), listening on every interface of the container (the
// config's default, loopback, would be unreachable from outside it), with
// the config expected at /etc/runfleet/config.yaml and state in the volume.
func runtimeSettings(o options) runtimeConfig {
	return runtimeConfig{
		User: fmt.Sprintf("%d:%d", imageUID, imageUID),
		Env: []string{
			"PATH=/usr/local/bin",
			"SSL_CERT_FILE=" + caBundlePath,
			"RUNFLEET_CONFIG=" + configDir + "/config.yaml",
			"RUNFLEET_LISTEN=0.0.0.0:8080",
		},
		Entrypoint:   []string{binaryPath},
		Cmd:          []string{"serve"},
		WorkingDir:   stateDir,
		ExposedPorts: map[string]struct{}{"8080/tcp": {}},
		Volumes:      map[string]struct{}{stateDir: {}},
		Labels:       imageAnnotations(o),
		// serve shuts down gracefully on SIGTERM, a runtime's default.
		StopSignal: "SIGTERM",
	}
}

// imageAnnotations are the OCI's standard labels.
func imageAnnotations(o options) map[string]string {
	a := map[string]string{
		"org.opencontainers.image.title":    "runfleet",
		"org.opencontainers.image.version":  o.version,
		"org.opencontainers.image.licenses": "Apache-2.0",
		"org.opencontainers.image.source":   "https://github.com/runfleet/runfleet",
		"org.opencontainers.image.created":  o.created.UTC().Format(time.RFC3339),
	}
	if o.revision != "" {
		a["org.opencontainers.image.revision"] = o.revision
	}
	return a
}

// parseTarget reads "os/arch[/variant]=path".
func parseTarget(s string) (target, error) {
	spec, path, ok := strings.Cut(s, "=")
	parts := strings.Split(spec, "/")
	if !ok || path == "" || len(parts) < 2 || len(parts) > 3 || parts[0] == "" || parts[1] == "" {
		return target{}, fmt.Errorf("%q: want OS/ARCH=BINARY, e.g. linux/amd64=bin/release/runfleet-linux-amd64", s)
	}
	p := platform{OS: parts[0], Architecture: parts[1]}
	if len(parts) == 3 {
		p.Variant = parts[2]
	} else if p.Architecture == "arm64" {
		p.Variant = "v8" // what registries and runtimes expect for arm64
	}
	return target{platform: p, binary: path}, nil
}
