package ec2

import (
	"fmt"
	"math"
	"regexp"

	"github.com/runfleet/runfleet/providers/settings"
)

// WarmPoolSettings keep a pool's stopped warm machines
// (pools[].provider.settings.warm_pool).
type WarmPoolSettings struct {
	// Size is how many stopped machines the reconciler keeps ready; 0 =
	// no warm pool (and any warm machines left are terminated).
	Size int
	// RunnerVersion is the actions runner release installed on a warm
	// machine before it stops; empty = defaultWarmRunnerVersion, the
	// version runfleet's install script installs by default.
	RunnerVersion string
}

const (
	keyWarmPool          = "warm_pool"
	keyWarmSize          = "size"
	keyWarmRunnerVersion = "runner_version"
	// maxWarmPoolSize bounds the stopped machines per pool: each costs its
	// EBS volumes while it waits.
	maxWarmPoolSize = 100
	// defaultWarmRunnerVersion is internal/metadata.DefaultRunnerVersion
	// (a test keeps them equal); the install script skips its download
	// when a runner is already installed.
	defaultWarmRunnerVersion = "2.328.0"
)

var runnerVersionPattern = regexp.MustCompile(`^[0-9]+\.[0-9]+\.[0-9]+$`)

// readWarmPool reads warm_pool: {size: N, runner_version: "2.328.0"}.
func readWarmPool(r *settings.Reader, key string) WarmPoolSettings {
	m := r.Map(key)
	if m == nil {
		return WarmPoolSettings{}
	}
	sub := settings.NewReader(m, keyWarmSize, keyWarmRunnerVersion)
	var out WarmPoolSettings
	if f, ok := sub.Float(keyWarmSize); ok {
		if f != math.Trunc(f) || f < 0 || f > maxWarmPoolSize {
			sub.Fail(keyWarmSize, "want a whole number of machines from 0 to %d, got %v", maxWarmPoolSize, f)
		} else {
			out.Size = int(f)
		}
	}
	out.RunnerVersion = sub.String(keyWarmRunnerVersion)
	if out.RunnerVersion != "" && !runnerVersionPattern.MatchString(out.RunnerVersion) {
		sub.Fail(keyWarmRunnerVersion, "want a runner release such as 2.328.0, got %q", out.RunnerVersion)
	}
	if err := sub.Err(); err != nil {
		r.Fail(key, "%v", err)
		return WarmPoolSettings{}
	}
	return out
}

func (w WarmPoolSettings) runnerVersion() string {
	if w.RunnerVersion == "" {
		return defaultWarmRunnerVersion
	}
	return w.RunnerVersion
}

func (w WarmPoolSettings) String() string {
	return fmt.Sprintf("warm_pool{size: %d, runner_version: %s}", w.Size, w.runnerVersion())
}
