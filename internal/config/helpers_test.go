package config_test

import (
	"errors"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/runfleet/runfleet/internal/config"
)

// validYAML is a minimal config that passes; cases change one thing.
const validYAML = `
controller_id: test
github:
  simulated: true
webhook:
  secret_env: HOOK_SECRET
pools:
  - name: linux-x64
    owner: octo-org
    labels: [self-hosted, linux, x64]
    max_runners: 3
    provider:
      type: simulated
`

// testEnv is the environment and file system a parse sees.
type testEnv struct {
	env   map[string]string
	files map[string]string
}

func defaultEnv() testEnv {
	return testEnv{env: map[string]string{"HOOK_SECRET": "hook-secret-value"}, files: map[string]string{}}
}

func (e testEnv) lookupEnv(k string) (string, bool) {
	v, ok := e.env[k]
	return v, ok
}

func (e testEnv) readFile(p string) ([]byte, error) {
	v, ok := e.files[p]
	if !ok {
		return nil, &os.PathError{Op: "open", Path: p, Err: os.ErrNotExist}
	}
	return []byte(v), nil
}

func parse(t *testing.T, yaml string, e testEnv) (*config.Config, error) {
	t.Helper()
	return config.Parse([]byte(yaml), e.lookupEnv, e.readFile)
}

// messages flattens a joined error into its FieldErrors' messages, and
// fails the test if any part is not a *config.FieldError.
func messages(t *testing.T, err error) []string {
	t.Helper()
	if err == nil {
		return nil
	}
	var parts []error
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		parts = j.Unwrap()
	} else {
		parts = []error{err}
	}
	var out []string
	for _, p := range parts {
		var fe *config.FieldError
		if !errors.As(p, &fe) {
			t.Errorf("error %q is not a *config.FieldError", p)
		}
		out = append(out, p.Error())
	}
	return out
}

func assertMessages(t *testing.T, err error, want ...string) {
	t.Helper()
	got := messages(t, err)
	for _, w := range want {
		if !slices.Contains(got, w) {
			t.Errorf("missing error %q; got:\n  %s", w, strings.Join(got, "\n  "))
		}
	}
}

// replace swaps one exact piece of validYAML, failing loudly if the piece
// is not there (so a case can never silently test the valid config).
func replace(t *testing.T, old, new string) string {
	t.Helper()
	if !strings.Contains(validYAML, old) {
		t.Fatalf("validYAML has no %q", old)
	}
	return strings.Replace(validYAML, old, new, 1)
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

func assertContains(t *testing.T, s, want string) {
	t.Helper()
	if !strings.Contains(s, want) {
		t.Errorf("%q does not contain %q", s, want)
	}
}
