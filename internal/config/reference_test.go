package config

import (
	"flag"
	"os"
	"slices"
	"strings"
	"testing"
)

// docs/config.md is generated: `go test ./internal/config -run
// TestConfigReference -update` writes it from the config types, their
// defaults and keyDocs.
var updateReference = flag.Bool("update", false, "rewrite docs/config.md from the config types")

const referencePath = "../../docs/config.md"

const referenceIntro = `# Configuration reference

<!-- Generated from internal/config's types by
     go test ./internal/config -run TestConfigReference -update
     Edit keyDocs in internal/config/reference_keys_test.go, not this file. -->

runfleet reads one YAML file, the same in both modes: ` + "`runfleet serve --config FILE`" + ` in embedded
mode, and the SSM parameter the stack names on AWS ([deploy.md](deploy.md#config)). This page lists every
key. [` + "`examples/local.yaml`" + `](../examples/local.yaml) and [` + "`examples/ec2.yaml`" + `](../examples/ec2.yaml) are
annotated examples.

- **Secrets are never in the file.** A ` + "`…_file`" + ` key names a file holding the secret, a ` + "`…_env`" + ` key an
  environment variable; set one of the two. On AWS only ` + "`…_env`" + ` works, and the names are answered from
  Secrets Manager ([deploy.md](deploy.md#secrets)).
- **Durations** are written with a unit: ` + "`30s`, `5m`, `1h30m`" + `. A bare number such as ` + "`30`" + ` is refused.
- **Unset or zero means the default.** To get another value, write it.
- **Used by**: ` + "`serve`" + ` keys apply to embedded mode only (the Lambda functions ignore them; leave the
  ` + "`store`" + ` section out of an AWS config, and the ` + "`server`" + ` section too but ` + "`server.public_url`" + ` with the cache);
  ` + "`both`" + ` keys apply in both modes.
- An invalid file is refused before anything starts, with every problem listed by key and line at
  once, and a suggestion for a misspelt key.

| key | type | default | used by | meaning |
|---|---|---|---|---|
`

// renderReference writes the reference table, one row per key.
func renderReference(t *testing.T) string {
	t.Helper()
	var b strings.Builder
	b.WriteString(referenceIntro)
	for _, k := range configKeys() {
		d := keyDocs[k.path]
		typ := k.typeName
		switch {
		case d.unit != "":
			typ += " (" + d.unit + ")"
		case typ == "duration":
			typ += " (`30s`, `5m`, `1h`)"
		}
		def := "—"
		switch {
		case k.computed != "":
			def = "`" + k.computed + "`"
		case d.fallback != "":
			def = "`" + d.fallback + "`"
		}
		b.WriteString("| `" + k.path + "` | " + typ + " | " + def + " | " + d.modes + " | " + d.doc + " |\n")
	}
	return b.String()
}

// Every key of the types has a row and every row a key, with a mode and
// a meaning; a default is stated once: by applyDefaults or by keyDocs.
func TestConfigReferenceIsComplete(t *testing.T) {
	var paths []string
	for _, k := range configKeys() {
		paths = append(paths, k.path)
		d, ok := keyDocs[k.path]
		switch {
		case !ok:
			t.Errorf("config key %s has no entry in keyDocs (reference_keys_test.go): say what it does", k.path)
			continue
		case d.modes != both && d.modes != serve:
			t.Errorf("%s: modes %q, want %q or %q", k.path, d.modes, both, serve)
		case strings.TrimSpace(d.doc) == "":
			t.Errorf("%s: no meaning", k.path)
		case d.fallback != "" && k.computed != "":
			t.Errorf("%s: keyDocs says default %s, but applyDefaults fills in %s: drop the fallback", k.path, d.fallback, k.computed)
		}
	}
	for path := range keyDocs {
		if !slices.Contains(paths, path) {
			t.Errorf("keyDocs documents %s, which is no config key", path)
		}
	}
}

// docs/config.md is what the types say today.
func TestConfigReferenceIsCurrent(t *testing.T) {
	want := renderReference(t)
	if *updateReference {
		if err := os.WriteFile(referencePath, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	got, err := os.ReadFile(referencePath)
	if err != nil {
		t.Fatalf("%v (write it: go test ./internal/config -run TestConfigReference -update)", err)
	}
	if string(got) != want {
		t.Errorf("docs/config.md is out of date with the config types; regenerate it:\n  go test ./internal/config -run TestConfigReference -update")
	}
}
