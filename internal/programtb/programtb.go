// Package programtb lets the fakes written for tests (githubtest,
// scalesettest) run inside a program — the chaos and load drivers — where
// there is no *testing.T: a TB collects the misuse they report and runs
// their cleanups when the program is done with them.
package programtb

import (
	"fmt"
	"strings"
	"sync"
	"testing"
)

// TB implements the testing.TB methods the fakes call; the embedded
// interface is nil, so any other method panics. Name is what Name
// answers and what a fatal misuse's panic names.
type TB struct {
	testing.TB
	Program string

	mu       sync.Mutex
	problems []string
	cleanups []func()
}

func (t *TB) Helper()      {}
func (t *TB) Name() string { return t.Program }

func (t *TB) Errorf(format string, args ...any) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.problems = append(t.problems, fmt.Sprintf(format, args...))
}

func (t *TB) Fatalf(format string, args ...any) {
	t.Errorf(format, args...)
	panic(t.Program + ": fake GitHub: " + fmt.Sprintf(format, args...))
}

func (t *TB) Cleanup(f func()) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.cleanups = append(t.cleanups, f)
}

// RunCleanups runs the cleanups registered so far, last first.
func (t *TB) RunCleanups() {
	t.mu.Lock()
	fs := t.cleanups
	t.cleanups = nil
	t.mu.Unlock()
	for i := len(fs) - 1; i >= 0; i-- {
		fs[i]()
	}
}

// Err is every misuse the fakes reported, or nil.
func (t *TB) Err() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.problems) == 0 {
		return nil
	}
	return fmt.Errorf("fake GitHub reported misuse by %s: %s", t.Program, strings.Join(t.problems, "; "))
}
