package pgtest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
)

// binDir finds the directory of initdb and postgres: BinDirEnv, else the
// newest Debian install (/usr/lib/postgresql/<major>/bin), else wherever
// initdb on PATH points.
func binDir() (string, error) {
	if dir := os.Getenv(BinDirEnv); dir != "" {
		return dir, checkBinDir(dir)
	}
	debian, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	slices.SortFunc(debian, func(a, b string) int { return compareMajor(b, a) }) // newest first
	for _, dir := range debian {
		if checkBinDir(dir) == nil {
			return dir, nil
		}
	}
	if path, err := exec.LookPath("initdb"); err == nil {
		if real, err := filepath.EvalSymlinks(path); err == nil {
			path = real
		}
		dir := filepath.Dir(path)
		return dir, checkBinDir(dir)
	}
	return "", fmt.Errorf("PostgreSQL's initdb and postgres are not installed: apt-get install -y postgresql "+
		"(or set %s to the directory that holds them)", BinDirEnv)
}

// compareMajor orders /usr/lib/postgresql/<major>/bin paths by major
// version, numerically.
func compareMajor(a, b string) int {
	var ma, mb int
	_, _ = fmt.Sscanf(filepath.Base(filepath.Dir(a)), "%d", &ma)
	_, _ = fmt.Sscanf(filepath.Base(filepath.Dir(b)), "%d", &mb)
	return ma - mb
}

func checkBinDir(dir string) error {
	for _, name := range []string{"initdb", "postgres"} {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			return fmt.Errorf("%s: no %s there: %w", dir, name, err)
		}
	}
	return nil
}
