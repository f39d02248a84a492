package external_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/cloudbase/garm-provider-common/params"

	"github.com/runfleet/runfleet/providers"
	"github.com/runfleet/runfleet/providers/external/externaltest"
)

// githubTools is what the engine puts in a request: GitHub's list for the
// owner, every OS and architecture.
var githubTools = []providers.RunnerDownload{
	{OS: "linux", Architecture: "x64", DownloadURL: "https://github.com/actions/runner/releases/download/v2.328.0/actions-runner-linux-x64-2.328.0.tar.gz", Filename: "actions-runner-linux-x64-2.328.0.tar.gz", SHA256Checksum: "aa11"},
	{OS: "linux", Architecture: "arm64", DownloadURL: "https://ghes.example/runner/actions-runner-linux-arm64-2.328.0.tar.gz", Filename: "actions-runner-linux-arm64-2.328.0.tar.gz", TempDownloadToken: "short-lived"},
	{OS: "win", Architecture: "x64", DownloadURL: "https://github.com/actions/runner/releases/download/v2.328.0/actions-runner-win-x64-2.328.0.zip", Filename: "actions-runner-win-x64-2.328.0.zip"},
}

// sentBootstrap is the BootstrapInstance the provider read on stdin, as a
// GARM provider decodes it.
func sentBootstrap(t *testing.T, f *fixture) params.BootstrapInstance {
	t.Helper()
	var b params.BootstrapInstance
	if err := json.Unmarshal([]byte(f.lastRecord().Stdin), &b); err != nil {
		t.Fatalf("stdin is not a BootstrapInstance: %v", err)
	}
	return b
}

func TestRequestToolsReachTheProvider(t *testing.T) {
	f := newFixture(t, externaltest.Config{RequireTools: true}, map[string]any{"os_type": "linux", "arch": "arm64"})
	req := createRequest("m-tools")
	req.RunnerDownloads = githubTools
	if _, err := f.provider.CreateInstance(context.Background(), req); err != nil {
		t.Fatalf("a provider needing tools refused them: %v", err)
	}
	b := sentBootstrap(t, f)
	if len(b.Tools) != len(githubTools) {
		t.Fatalf("provider got %d tools, want %d", len(b.Tools), len(githubTools))
	}
	for i, want := range githubTools {
		got := b.Tools[i]
		if got.GetOS() != want.OS || got.GetArchitecture() != want.Architecture || got.GetDownloadURL() != want.DownloadURL ||
			got.GetFilename() != want.Filename || got.GetSHA256Checksum() != want.SHA256Checksum || got.GetTempDownloadToken() != want.TempDownloadToken {
			t.Errorf("tool %d = %s, want %+v", i, mustJSON(t, got), want)
		}
	}
	// Fields GitHub did not send are left out, not sent empty.
	if raw := f.lastRecord().Stdin; strings.Contains(raw, `"sha256_checksum":""`) || strings.Contains(raw, `"temp_download_token":""`) {
		t.Errorf("empty optional fields were sent: %s", raw)
	}
}

func TestNoToolsFailsAProviderThatNeedsThem(t *testing.T) {
	f := newFixture(t, externaltest.Config{RequireTools: true}, map[string]any{"os_type": "linux", "arch": "amd64"})
	req := createRequest("m-none")
	req.RunnerDownloads = githubTools[1:] // no linux/x64 build
	_, err := f.provider.CreateInstance(context.Background(), req)
	if err == nil || !strings.Contains(providers.Fault(err), "failed to get tools") {
		t.Fatalf("create without a fitting tool = %v, want the provider's \"failed to get tools\"", err)
	}
}

func TestPoolToolsSettingOverridesGitHubs(t *testing.T) {
	pinned := map[string]any{"os": "linux", "architecture": "x64", "download_url": "https://mirror.internal/runner.tgz", "filename": "runner.tgz"}
	cases := []struct {
		name    string
		setting []any
		want    []string // download URLs sent
	}{
		{"a pinned build", []any{pinned}, []string{"https://mirror.internal/runner.tgz"}},
		{"an explicit empty list", []any{}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, externaltest.Config{}, map[string]any{"tools": tc.setting})
			req := createRequest("m-pinned")
			req.RunnerDownloads = githubTools
			if _, err := f.provider.CreateInstance(context.Background(), req); err != nil {
				t.Fatal(err)
			}
			b := sentBootstrap(t, f)
			var got []string
			for _, tool := range b.Tools {
				got = append(got, tool.GetDownloadURL())
			}
			if strings.Join(got, ",") != strings.Join(tc.want, ",") || b.Tools == nil {
				t.Errorf("tools sent %v, want %v (the pool's setting)", got, tc.want)
			}
		})
	}
}
