package simulated

import (
	"context"
	"crypto/sha256"
	"encoding/hex"

	"github.com/runfleet/runfleet/internal/github"
)

// RunnerVersion is the runner release the simulated download list offers.
const RunnerVersion = "2.328.0"

// runnerBuilds are the OS/architecture pairs GitHub publishes runners for,
// in GitHub's names.
var runnerBuilds = []struct{ os, arch, ext string }{
	{"osx", "x64", "tar.gz"},
	{"osx", "arm64", "tar.gz"},
	{"linux", "x64", "tar.gz"},
	{"linux", "arm", "tar.gz"},
	{"linux", "arm64", "tar.gz"},
	{"win", "x64", "zip"},
	{"win", "arm64", "zip"},
}

// RunnerDownloads returns the same static list for every owner: the
// runner's GitHub release files. The checksums are made up (a hash of the
// file name), so nothing should verify a real download against them.
func (g *GitHub) RunnerDownloads(ctx context.Context, owner github.Owner) ([]github.RunnerDownload, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	inj, err := g.beginLocked(OpRunnerDownloads)
	if err != nil {
		return nil, err
	}
	if inj != nil {
		return nil, inj.err
	}
	if owner.Org == "" && owner.Enterprise == "" {
		return nil, errNoOwner
	}
	out := make([]github.RunnerDownload, 0, len(runnerBuilds))
	for _, b := range runnerBuilds {
		file := "actions-runner-" + b.os + "-" + b.arch + "-" + RunnerVersion + "." + b.ext
		sum := sha256.Sum256([]byte(file))
		out = append(out, github.RunnerDownload{
			OS:             b.os,
			Architecture:   b.arch,
			DownloadURL:    "https://github.com/actions/runner/releases/download/v" + RunnerVersion + "/" + file,
			Filename:       file,
			SHA256Checksum: hex.EncodeToString(sum[:]),
		})
	}
	return out, nil
}
