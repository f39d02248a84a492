package simulated_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/runfleet/runfleet/internal/github"
	"github.com/runfleet/runfleet/internal/github/simulated"
)

func TestRunnerDownloadsOfferEveryBuildAndCountAsCalls(t *testing.T) {
	ctx := context.Background()
	g := simulated.New()
	for _, owner := range []github.Owner{org, repo, ent} {
		list, err := g.RunnerDownloads(ctx, owner)
		if err != nil {
			t.Fatalf("%s: %v", owner, err)
		}
		found := map[string]github.RunnerDownload{}
		for _, d := range list {
			found[d.OS+"/"+d.Architecture] = d
			if !strings.HasSuffix(d.DownloadURL, "/"+d.Filename) || !strings.Contains(d.Filename, simulated.RunnerVersion) || len(d.SHA256Checksum) != 64 {
				t.Errorf("%s: download %+v", owner, d)
			}
		}
		for _, want := range []string{"linux/x64", "linux/arm64", "linux/arm", "win/x64", "osx/arm64"} {
			if _, ok := found[want]; !ok {
				t.Errorf("%s: no %s build in %+v", owner, want, list)
			}
		}
	}
	if _, err := g.RunnerDownloads(ctx, github.Owner{}); err == nil {
		t.Error("a request without an owner succeeded")
	}
	boom := errors.New("boom")
	g.FailNext(simulated.OpRunnerDownloads, boom)
	if _, err := g.RunnerDownloads(ctx, org); !errors.Is(err, boom) {
		t.Errorf("injected failure: %v", err)
	}
	if got := g.Calls(simulated.OpRunnerDownloads); got != 5 {
		t.Errorf("calls = %d, want 5 (failures count: they spend budget on GitHub)", got)
	}
}
