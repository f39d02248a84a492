package githubtest

import (
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"slices"
)

// RunnerApplication is one runner build the downloads routes list
// (GitHub's "runner-application").
type RunnerApplication struct {
	OS                string
	Architecture      string
	DownloadURL       string
	Filename          string
	SHA256Checksum    string // omitted from the answer when empty
	TempDownloadToken string // omitted from the answer when empty
}

// DefaultRunnerVersion is the runner release the default downloads list
// offers.
const DefaultRunnerVersion = "2.328.0"

// DefaultRunnerApplications is what the downloads routes list until
// SetRunnerApplications changes it: the runner's GitHub release files for
// every OS and architecture GitHub builds, with made-up checksums.
func DefaultRunnerApplications() []RunnerApplication {
	builds := []struct{ os, arch, ext string }{
		{"osx", "x64", "tar.gz"}, {"osx", "arm64", "tar.gz"},
		{"linux", "x64", "tar.gz"}, {"linux", "arm", "tar.gz"}, {"linux", "arm64", "tar.gz"},
		{"win", "x64", "zip"}, {"win", "arm64", "zip"},
	}
	out := make([]RunnerApplication, 0, len(builds))
	for _, b := range builds {
		file := "actions-runner-" + b.os + "-" + b.arch + "-" + DefaultRunnerVersion + "." + b.ext
		sum := sha256.Sum256([]byte(file))
		out = append(out, RunnerApplication{
			OS: b.os, Architecture: b.arch, Filename: file, SHA256Checksum: hex.EncodeToString(sum[:]),
			DownloadURL: "https://github.com/actions/runner/releases/download/v" + DefaultRunnerVersion + "/" + file,
		})
	}
	return out
}

// SetRunnerApplications replaces the list every owner's downloads route
// answers with (as a GitHub Enterprise Server serving its own runner
// builds, with temporary download tokens, would). nil restores the
// default list.
func (s *Server) SetRunnerApplications(apps []RunnerApplication) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.runnerApps = slices.Clone(apps) // an empty list stays empty, nil stays nil
}

// runnerApplicationJSON is GitHub's "runner-application".
type runnerApplicationJSON struct {
	OS                string `json:"os"`
	Architecture      string `json:"architecture"`
	DownloadURL       string `json:"download_url"`
	Filename          string `json:"filename"`
	TempDownloadToken string `json:"temp_download_token,omitempty"`
	SHA256Checksum    string `json:"sha256_checksum,omitempty"`
}

// handleListRunnerApplications answers the org, repo and enterprise
// downloads routes: the whole list, unpaginated, as GitHub does.
func (s *Server) handleListRunnerApplications(req *request) reply {
	apps := s.runnerApps
	if apps == nil {
		apps = DefaultRunnerApplications()
	}
	body := make([]runnerApplicationJSON, 0, len(apps))
	for _, a := range apps {
		body = append(body, runnerApplicationJSON{
			OS: a.OS, Architecture: a.Architecture, DownloadURL: a.DownloadURL, Filename: a.Filename,
			TempDownloadToken: a.TempDownloadToken, SHA256Checksum: a.SHA256Checksum,
		})
	}
	return jsonReply(http.StatusOK, body)
}
