package rest_test

import (
	"context"
	"errors"
	"testing"

	"github.com/runfleet/runfleet/internal/github"
	"github.com/runfleet/runfleet/internal/github/githubtest"
	"github.com/runfleet/runfleet/internal/github/rest"
)

func TestRunnerDownloadsForEveryOwnerKind(t *testing.T) {
	srv := fakeGitHub(t)
	c := appClient(t, srv, testInstallationID, nil)
	want := githubtest.DefaultRunnerApplications()
	routes := []string{githubtest.RouteOrgRunnerDownloads, githubtest.RouteRepoRunnerDownloads, githubtest.RouteEnterpriseRunnerDownloads}
	for i, owner := range []github.Owner{orgOwner, repoOwner, entOwner} {
		got, err := c.RunnerDownloads(context.Background(), owner)
		if err != nil {
			t.Fatalf("%s: %v", owner, err)
		}
		if len(got) != len(want) {
			t.Fatalf("%s: %d downloads, want %d", owner, len(got), len(want))
		}
		for j, d := range got {
			w := want[j]
			if d.OS != w.OS || d.Architecture != w.Architecture || d.DownloadURL != w.DownloadURL || d.Filename != w.Filename || d.SHA256Checksum != w.SHA256Checksum {
				t.Errorf("%s: download %d = %+v, want %+v", owner, j, d, w)
			}
		}
		if n := srv.CallCount(routes[i]); n != 1 {
			t.Errorf("%s: %d calls to %s, want 1", owner, n, routes[i])
		}
	}
	if calls := c.Calls(); calls.ByOperation[rest.OpListRunnerDownloads] != 3 || calls.API() != 3 {
		t.Errorf("calls %+v, want 3 counted as %s", calls, rest.OpListRunnerDownloads)
	}
}

func TestRunnerDownloadsCarryGHESTokens(t *testing.T) {
	srv := fakeGitHub(t)
	srv.SetRunnerApplications([]githubtest.RunnerApplication{{
		OS: "linux", Architecture: "x64", Filename: "actions-runner-linux-x64-2.328.0.tar.gz",
		DownloadURL: "https://ghes.example/runner.tar.gz", TempDownloadToken: "short-lived",
	}})
	c := appClient(t, srv, testInstallationID, nil)
	got, err := c.RunnerDownloads(context.Background(), orgOwner)
	if err != nil || len(got) != 1 || got[0].TempDownloadToken != "short-lived" || got[0].SHA256Checksum != "" {
		t.Fatalf("downloads %+v, %v", got, err)
	}
}

func TestRunnerDownloadsErrorsAreThePortsErrors(t *testing.T) {
	srv := fakeGitHub(t)
	c := appClient(t, srv, testInstallationID, nil)
	srv.Inject(githubtest.RouteOrgRunnerDownloads, githubtest.Forbidden().Times(1))
	_, err := c.RunnerDownloads(context.Background(), orgOwner)
	var perm *github.PermissionError
	if !errors.As(err, &perm) || !errors.Is(err, github.ErrMisconfigured) {
		t.Fatalf("403: %v, want a *github.PermissionError", err)
	}
	if _, err := c.RunnerDownloads(context.Background(), github.Owner{}); err == nil {
		t.Fatal("an empty owner was accepted")
	}
}
