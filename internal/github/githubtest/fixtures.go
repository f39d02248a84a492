package githubtest

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// Where infra/test/install-fixtures.sh puts GitHub's published descriptions:
// an npm prefix inside the emulator cache.
const (
	emulatorDirEnv     = "RUNFLEET_EMULATOR_DIR"
	fixturesPrefix     = "github"
	openAPIPackage     = "@octokit/openapi"
	webhooksPackage    = "@octokit/webhooks-examples"
	fixturesInstallFix = "run `make emulators` (or bash infra/test/install-fixtures.sh) before `go test`"
)

// FixturesDir is the npm prefix holding @octokit/openapi and
// @octokit/webhooks-examples: $RUNFLEET_EMULATOR_DIR/github, the variable
// taken relative to the repository root when not absolute, by default
// <repo>/.cache/emulators/github.
func FixturesDir() (string, error) {
	dir := os.Getenv(emulatorDirEnv)
	if !filepath.IsAbs(dir) {
		root, err := repoRoot()
		if err != nil {
			return "", err
		}
		if dir == "" {
			dir = filepath.Join(".cache", "emulators")
		}
		dir = filepath.Join(root, dir)
	}
	return filepath.Join(dir, fixturesPrefix), nil
}

// repoRoot is the nearest directory above the working directory (a test's
// package directory) holding go.mod.
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("githubtest: working directory: %w", err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("githubtest: no go.mod above the working directory; set " + emulatorDirEnv + " to an absolute path")
		}
		dir = parent
	}
}

// FixtureFile is the path of a file inside an installed fixture package,
// such as FixtureFile(t, "@octokit/openapi", "generated", "api.github.com.json").
// A missing package fails the test (never skips) with how to install it.
func FixtureFile(t testing.TB, pkg string, elem ...string) string {
	t.Helper()
	dir, err := FixturesDir()
	if err != nil {
		t.Fatalf("githubtest: %v", err)
	}
	path := filepath.Join(append([]string{dir, "node_modules", pkg}, elem...)...)
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("githubtest: %s is not installed (%v): %s", pkg, err, fixturesInstallFix)
	}
	return path
}

// OpenAPIDescriptionPath is the api.github.com REST description ("ghec"
// for GitHub Enterprise Cloud, which adds the enterprise endpoints).
func OpenAPIDescriptionPath(t testing.TB, flavour string) string {
	t.Helper()
	return FixtureFile(t, openAPIPackage, "generated", flavour+".json")
}

// WebhookExample is one example delivery from @octokit/webhooks-examples.
type WebhookExample struct {
	Event  string
	Action string
	// Index is the example's position among the event's examples.
	Index int
	// Payload is the example body exactly as the package stores it.
	Payload json.RawMessage
}

var webhookExamples struct {
	once sync.Once
	byEv map[string][]WebhookExample
	err  error
}

// WebhookExamples returns GitHub's example payloads for an event (such as
// "workflow_job") from the installed @octokit/webhooks-examples, in the
// package's order. The package is read once per test binary.
func WebhookExamples(t testing.TB, event string) []WebhookExample {
	t.Helper()
	path := FixtureFile(t, webhooksPackage, "api.github.com", "index.json")
	webhookExamples.once.Do(func() {
		webhookExamples.byEv, webhookExamples.err = loadWebhookExamples(path)
	})
	if webhookExamples.err != nil {
		t.Fatalf("githubtest: %v", webhookExamples.err)
	}
	examples := webhookExamples.byEv[event]
	if len(examples) == 0 {
		t.Fatalf("githubtest: %s has no examples for event %q", webhooksPackage, event)
	}
	return examples
}

func loadWebhookExamples(path string) (map[string][]WebhookExample, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	var index []struct {
		Name     string            `json:"name"`
		Examples []json.RawMessage `json:"examples"`
	}
	if err := json.Unmarshal(b, &index); err != nil {
		return nil, fmt.Errorf("decoding %s: %w", path, err)
	}
	out := map[string][]WebhookExample{}
	for _, ev := range index {
		for i, raw := range ev.Examples {
			var head struct {
				Action string `json:"action"`
			}
			if err := json.Unmarshal(raw, &head); err != nil {
				return nil, fmt.Errorf("%s: %s example %d: %w", path, ev.Name, i, err)
			}
			out[ev.Name] = append(out[ev.Name], WebhookExample{Event: ev.Name, Action: head.Action, Index: i, Payload: raw})
		}
	}
	return out, nil
}
