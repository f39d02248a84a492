package testclock_test

import (
	"bufio"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// frozenClosure is a clock made by hand: a function returning a captured
// time. ShiftEnv cannot move it, so a test built on it can hide a part of
// the code that reads the real clock until the calendar catches up with
// its date (issue #30). testclock.At(t).Now is the same clock, movable.
var frozenClosure = regexp.MustCompile(`func\(\) time\.Time \{ return [A-Za-z_][A-Za-z0-9_.]*(\(\))? \}`)

// Every stopped clock in the repository's tests is a testclock, so that
// `make test`'s run with the clocks moved (ShiftEnv) moves them all. A
// closure that must keep its instant as written says why in the comment
// just above it, starting "testclock:".
func TestRepositoryTestsStopTimeWithTestclock(t *testing.T) {
	root := repositoryRoot(t)
	var found []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") || d.Name() == "bin" || d.Name() == "node_modules") && path != root {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		var comment string // the comment block just above the line
		for n := 1; sc.Scan(); n++ {
			line := sc.Text()
			m := frozenClosure.FindString(line)
			if m != "" && !strings.Contains(m, "time.Now()") && !strings.Contains(comment, "// testclock:") {
				rel, _ := filepath.Rel(root, path)
				found = append(found, rel+":"+strconv.Itoa(n)+": "+strings.TrimSpace(line))
			}
			if strings.HasPrefix(strings.TrimSpace(line), "//") {
				comment += line + "\n"
			} else {
				comment = ""
			}
		}
		return sc.Err()
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range found {
		t.Errorf("%s\n\ta clock made by hand: use testclock.At(t).Now (or say why not in a \"// testclock:\" comment just above)", f)
	}
}

func repositoryRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the test's directory")
		}
		dir = parent
	}
}
