package ec2

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/runfleet/runfleet/providers"
)

// offlineProvider is a provider whose tests never reach EC2.
func offlineProvider(t *testing.T, s Settings) *Provider {
	t.Helper()
	if s.ImageID == "" && s.LaunchTemplate == "" {
		s.ImageID = "ami-0123456789abcdef0"
	}
	if len(s.InstanceTypes) == 0 && s.LaunchTemplate == "" {
		s.InstanceTypes = []string{"t3.large"}
	}
	p, err := NewWithConfig(aws.Config{Region: "us-east-1"}, Ownership{ControllerID: "ctl", PoolID: "pool-id"}, s)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func bootstrapRequest(metadataURL string) providers.CreateRequest {
	return providers.CreateRequest{
		Name:          "runfleet-linux-7-1",
		Pool:          "linux",
		MetadataURL:   metadataURL,
		InstanceToken: "tok'en; $(touch /tmp/pwned)",
		OSType:        "linux",
	}
}

// The default Linux user data, run by bash as cloud-init would, fetches
// the install script with the instance token and runs it.
func TestDefaultLinuxUserDataFetchesAndRunsTheInstallScript(t *testing.T) {
	t.Parallel()
	marker := filepath.Join(t.TempDir(), "installed")
	var requests atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := requests.Add(1)
		if r.URL.Path != "/metadata/install-script" {
			http.NotFound(w, r)
			return
		}
		if r.Header.Get("Authorization") != "Bearer tok'en; $(touch /tmp/pwned)" {
			http.Error(w, "bad token", http.StatusUnauthorized)
			return
		}
		if n == 1 { // the control plane is not reachable yet: the script retries
			http.Error(w, "starting", http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte("#!/bin/bash\necho installed > " + shellQuote(marker) + "\n"))
	}))
	defer srv.Close()

	req := bootstrapRequest(srv.URL + "/metadata/")
	userData, err := offlineProvider(t, Settings{}).renderUserData(req)
	if err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(t.TempDir(), "user-data")
	if err := os.WriteFile(script, userData, 0o700); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	// The retry sleeps 5 s; shorten it so the test stays quick.
	cmd := exec.CommandContext(ctx, "bash", "-c", `sleep() { :; }; export -f sleep; bash "$0"`, script)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("user data failed: %v\n%s\n--- script:\n%s", err, out, userData)
	}
	got, err := os.ReadFile(marker)
	if err != nil || strings.TrimSpace(string(got)) != "installed" {
		t.Fatalf("install script did not run: %q, %v", got, err)
	}
	if n := requests.Load(); n != 2 {
		t.Errorf("%d requests, want 2 (one refused, one retried)", n)
	}
}

func TestDefaultWindowsUserDataIsPowerShellWithQuotedValues(t *testing.T) {
	t.Parallel()
	req := bootstrapRequest("https://control.example/metadata")
	req.OSType = "Windows"
	userData, err := offlineProvider(t, Settings{}).renderUserData(req)
	if err != nil {
		t.Fatal(err)
	}
	text := string(userData)
	if !strings.HasPrefix(text, "<powershell>") || !strings.HasSuffix(strings.TrimSpace(text), "</powershell>") {
		t.Fatalf("not a PowerShell user data block:\n%s", text)
	}
	if !strings.Contains(text, `$instanceToken = 'tok''en; $(touch /tmp/pwned)'`) {
		t.Errorf("token not quoted as one PowerShell verbatim string:\n%s", text)
	}
}

func TestCustomUserDataTemplate(t *testing.T) {
	t.Parallel()
	s := Settings{UserDataTemplate: "#!/bin/bash\n# {{.Name}} {{.Pool}} {{.OSType}}\ncurl -H \"Authorization: Bearer \"{{shellquote .InstanceToken}} {{shellquote .MetadataURL}}/install-script | bash\n"}
	userData, err := offlineProvider(t, s).renderUserData(bootstrapRequest("https://control.example/m"))
	if err != nil {
		t.Fatal(err)
	}
	want := "#!/bin/bash\n# runfleet-linux-7-1 linux linux\ncurl -H \"Authorization: Bearer \"'tok'\\''en; $(touch /tmp/pwned)' 'https://control.example/m'/install-script | bash\n"
	if string(userData) != want {
		t.Fatalf("rendered:\n%s\nwant:\n%s", userData, want)
	}
}

func TestUserDataOverEC2sLimitIsRefused(t *testing.T) {
	t.Parallel()
	s := Settings{UserDataTemplate: `{{.InstanceToken}}{{.InstanceToken}}`}
	req := bootstrapRequest("https://control.example/m")
	req.InstanceToken = strings.Repeat("x", maxUserDataBytes/2+1)
	if _, err := offlineProvider(t, s).renderUserData(req); err == nil || !strings.Contains(err.Error(), "at most 16384") {
		t.Fatalf("err = %v, want the 16 KiB limit", err)
	}
}
