package wiring_test

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"testing"

	"github.com/runfleet/runfleet/internal/config"
	"github.com/runfleet/runfleet/internal/engine"
	"github.com/runfleet/runfleet/internal/github"
	"github.com/runfleet/runfleet/internal/github/githubtest"
	"github.com/runfleet/runfleet/internal/github/rest"
	"github.com/runfleet/runfleet/internal/github/spread"
	"github.com/runfleet/runfleet/internal/metrics/promexport"
	"github.com/runfleet/runfleet/internal/wiring"
)

const appConfig = `
controller_id: test
github:
  base_url: %s
  app:
    id: 4242
    installation_id: 777
    private_key_env: RUNFLEET_GITHUB_PRIVATE_KEY
webhook:
  secret_env: RUNFLEET_WEBHOOK_SECRET
pools:
  - name: linux
    owner: octo-org
    labels: [self-hosted, linux]
    max_runners: 3
    provider:
      type: simulated
`

func newKey(t *testing.T) (*rsa.PrivateKey, []byte) {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	return key, pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})
}

// The private key reaches the client the way it does on Lambda: config.Parse
// asks lookupEnv (answered from Secrets Manager there) for the variable the
// config names. The client then authenticates as the App's installation.
func TestGitHubAppFromConfigTalksToGitHub(t *testing.T) {
	key, keyPEM := newKey(t)
	srv := githubtest.NewServer(t, githubtest.WithApp(4242, &key.PublicKey), githubtest.WithInstallation(777, ""))
	srv.AddOrg("octo-org")
	secrets := map[string]string{"RUNFLEET_GITHUB_PRIVATE_KEY": string(keyPEM), "RUNFLEET_WEBHOOK_SECRET": "s"}
	lookup := func(k string) (string, bool) { v, ok := secrets[k]; return v, ok }
	cfg, err := config.Parse(fmt.Appendf(nil, appConfig, srv.GHESURL()), lookup, os.ReadFile)
	if err != nil {
		t.Fatal(err)
	}
	var logs strings.Builder
	gh, err := wiring.GitHub(cfg, slog.New(slog.NewJSONHandler(&logs, nil)), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := gh.(*rest.Client); !ok {
		t.Fatalf("got %T, want the real client", gh)
	}
	if _, err := gh.ListRunners(context.Background(), github.Owner{Org: "octo-org"}); err != nil {
		t.Fatal(err)
	}
	if calls := srv.Calls(); len(calls) != 2 || calls[1].Identity != "installation:777" {
		t.Fatalf("calls %+v, want a token mint then a call as installation 777", calls)
	}
	if strings.Contains(logs.String(), "PRIVATE KEY") {
		t.Error("the private key reached the logs")
	}
	// As the App, the reconciler reads the App's webhook delivery log.
	rec := wiring.Deliveries(cfg, gh)
	if rec == nil || len(rec.Logs) != 1 || rec.Logs[0].Cursor != engine.DeliveryCursorName || rec.Parse == nil {
		t.Fatalf("delivery recovery with an App = %+v, want the App's log", rec)
	}
	if _, _, err := rec.Logs[0].Log.ListDeliveries(context.Background(), ""); err != nil {
		t.Fatalf("list deliveries as the App: %v", err)
	}
	if last := srv.Calls()[len(srv.Calls())-1]; last.Route != githubtest.RouteAppHookDeliveries || last.Identity != "app:4242" {
		t.Fatalf("last call %+v, want the delivery log read as the App", last)
	}
}

// With a token and no webhooks named there is no delivery log to read:
// recovery is off. With github.hooks, each hook's log is read with the
// token.
func TestDeliveryRecoveryWithATokenReadsTheNamedHooks(t *testing.T) {
	srv := githubtest.NewServer(t)
	srv.AddOrg("octo-org")
	srv.AddRepo("octo-org/app")
	srv.AddToken("ghp_x")
	orgHook, repoHook := srv.AddHook("octo-org"), srv.AddHook("octo-org/app")
	cfg := &config.Config{GitHub: config.GitHub{Token: "ghp_x", BaseURL: srv.GHESURL()}}
	gh, err := wiring.GitHub(cfg, slog.New(slog.DiscardHandler), nil)
	if err != nil {
		t.Fatal(err)
	}
	if rec := wiring.Deliveries(cfg, gh); rec != nil {
		t.Fatalf("delivery recovery with a token and no hooks = %+v, want nil", rec)
	}
	cfg.GitHub.Hooks = []config.Hook{{Owner: "octo-org", ID: orgHook}, {Owner: "octo-org/app", ID: repoHook}}
	rec := wiring.Deliveries(cfg, gh)
	if rec == nil || len(rec.Logs) != 2 {
		t.Fatalf("delivery recovery with two hooks = %+v, want their two logs", rec)
	}
	want := []string{githubtest.RouteOrgHookDeliveries, githubtest.RouteRepoHookDeliveries}
	for i, src := range rec.Logs {
		if _, _, err := src.Log.ListDeliveries(context.Background(), ""); err != nil {
			t.Fatalf("%s: %v", src.Cursor, err)
		}
		if last := srv.Calls()[len(srv.Calls())-1]; last.Route != want[i] || !strings.HasPrefix(last.Identity, "token:") {
			t.Fatalf("%s: last call %+v, want %s with the token", src.Cursor, last, want[i])
		}
	}
}

// Extra Apps make the port the spread over every App's client, which
// reads the first App's delivery log and reports every App's calls.
func TestExtraAppsSpreadTheCalls(t *testing.T) {
	_, keyPEM := newKey(t)
	gh, err := wiring.GitHub(&config.Config{GitHub: config.GitHub{App: &config.App{ID: 1, PrivateKey: keyPEM},
		ExtraApps: []config.App{{ID: 2, PrivateKey: keyPEM}, {ID: 3, PrivateKey: keyPEM}}}}, slog.New(slog.DiscardHandler), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := gh.(*spread.GitHub); !ok {
		t.Fatalf("got %T, want the spread over three Apps", gh)
	}
	if _, ok := gh.(github.DeliveryLog); !ok {
		t.Fatal("the spread reads no delivery log")
	}
	if _, ok := gh.(promexport.GitHubTelemetry); !ok {
		t.Fatal("the spread reports no call counts")
	}
}

func TestGitHubModes(t *testing.T) {
	log := slog.New(slog.DiscardHandler)
	_, keyPEM := newKey(t)
	cases := []struct {
		name    string
		gh      config.GitHub
		real    bool
		problem string
	}{
		{"app", config.GitHub{App: &config.App{ID: 1, PrivateKey: keyPEM}}, true, ""},
		{"token", config.GitHub{Token: "ghp_x", BaseURL: "https://ghes.example.com/api/v3"}, true, ""},
		{"app without a loaded key", config.GitHub{App: &config.App{ID: 1}}, false, "github.app"},
		{"app with a bad key", config.GitHub{App: &config.App{ID: 1, PrivateKey: []byte("-----BEGIN RSA PRIVATE KEY-----\nAAAA\n-----END RSA PRIVATE KEY-----\n")}}, false, "github.app"},
		{"nothing", config.GitHub{}, false, "github"},
		{"extra App without a loaded key", config.GitHub{App: &config.App{ID: 1, PrivateKey: keyPEM}, ExtraApps: []config.App{{ID: 2, PrivateKey: keyPEM}, {ID: 3}}}, false, "github.extra_apps[1]"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			gh, err := wiring.GitHub(&config.Config{GitHub: tc.gh}, log, nil)
			if tc.real {
				if _, ok := gh.(*rest.Client); err != nil || !ok {
					t.Fatalf("got %T, %v", gh, err)
				}
				return
			}
			var fe *config.FieldError
			if !errors.As(err, &fe) || fe.Field != tc.problem {
				t.Fatalf("err = %v, want a FieldError on %s", err, tc.problem)
			}
			if strings.Contains(err.Error(), "AAAA") {
				t.Error("the error shows key material")
			}
		})
	}
}
