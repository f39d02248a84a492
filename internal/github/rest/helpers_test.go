package rest_test

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"log/slog"
	"sync"
	"testing"

	"github.com/runfleet/runfleet/internal/github/githubtest"
	"github.com/runfleet/runfleet/internal/github/rest"
	"github.com/runfleet/runfleet/internal/testlog"
)

const (
	testAppID          int64 = 4242
	testInstallationID int64 = 777
	testOrg                  = "octo-org"
	testRepo                 = "octo-org/hello-world"
	testEnterprise           = "acme"
	testPAT                  = "ghp_testPersonalAccessToken0123456789"
)

// testKey is an App key pair, generated once: a 2048-bit RSA key takes a
// while under -race.
type testKey struct {
	PrivateKeyPEM []byte
	PublicKey     *rsa.PublicKey
}

var appKey = sync.OnceValue(func() testKey {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		panic(err)
	}
	block := &pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)}
	return testKey{PrivateKeyPEM: pem.EncodeToMemory(block), PublicKey: &key.PublicKey}
})

// fakeGitHub starts the fake with the App installed everywhere (installation
// 777) and the test org, repo and enterprise registered.
func fakeGitHub(t testing.TB, opts ...githubtest.Option) *githubtest.Server {
	t.Helper()
	opts = append([]githubtest.Option{
		githubtest.WithApp(testAppID, appKey().PublicKey),
		githubtest.WithInstallation(testInstallationID, ""),
		githubtest.WithToken(testPAT),
	}, opts...)
	srv := githubtest.NewServer(t, opts...)
	srv.AddOrg(testOrg)
	srv.AddRepo(testRepo)
	srv.AddEnterprise(testEnterprise)
	return srv
}

// appClient is runfleet's client for the fake, authenticated as the App
// with a default installation (0 = only what each call names).
func appClient(t *testing.T, srv *githubtest.Server, defaultInstallation int64, logs *testlog.Buffer) *rest.Client {
	t.Helper()
	opts := rest.Options{
		BaseURL:        srv.GHESURL(),
		AppID:          testAppID,
		PrivateKey:     appKey().PrivateKeyPEM,
		InstallationID: defaultInstallation,
	}
	if logs != nil {
		opts.Logger = slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	c, err := rest.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	return c
}
