package config_test

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"log/slog"
	"math/big"
	"strings"
	"testing"
	"time"
)

const tokenKey = "0123456789abcdef0123456789abcdef-instance-key"

func TestInstanceTokenKeyResolved(t *testing.T) {
	for _, tc := range []struct {
		name, yaml string
		env        func(*testEnv)
	}{
		{"from env", validYAML + "server:\n  public_url: https://runfleet.example\n  instance_token_key_env: TOKEN_KEY\n",
			func(e *testEnv) { e.env["TOKEN_KEY"] = tokenKey }},
		{"from file", validYAML + "server:\n  instance_token_key_file: /run/token.key\n",
			func(e *testEnv) { e.files["/run/token.key"] = tokenKey + "\n" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := defaultEnv()
			tc.env(&e)
			cfg, err := parse(t, tc.yaml, e)
			if err != nil {
				t.Fatal(err)
			}
			if string(cfg.Server.InstanceTokenKey) != tokenKey {
				t.Fatalf("InstanceTokenKey = %d bytes, want the key without its newline", len(cfg.Server.InstanceTokenKey))
			}
			// Neither printing nor logging the config shows the key.
			var logged bytes.Buffer
			slog.New(slog.NewJSONHandler(&logged, nil)).Info("config", "server", cfg.Server)
			for what, text := range map[string]string{
				"%v": fmt.Sprintf("%v", cfg.Server), "%+v": fmt.Sprintf("%+v", *cfg), "slog": logged.String(),
			} {
				if strings.Contains(text, tokenKey) {
					t.Errorf("%s shows the instance token key", what)
				}
				if !strings.Contains(text, "redacted") {
					t.Errorf("%s does not say the key is set (redacted): %s", what, text)
				}
			}
		})
	}
}

func TestInstanceTokenKeyProblems(t *testing.T) {
	e := defaultEnv()
	e.env["SHORT"] = strings.Repeat("k", 31)
	_, err := parse(t, validYAML+"server:\n  instance_token_key_env: SHORT\n", e)
	assertMessages(t, err, "server.instance_token_key_env: the key is 31 bytes; use at least 32 random bytes (e.g. openssl rand -hex 32)")

	_, err = parse(t, validYAML+"server:\n  instance_token_key_env: UNSET\n", defaultEnv())
	assertMessages(t, err, "server.instance_token_key_env: environment variable UNSET is not set")

	e = defaultEnv()
	e.env["K"] = tokenKey
	e.files["/k"] = tokenKey
	_, err = parse(t, validYAML+"server:\n  instance_token_key_env: K\n  instance_token_key_file: /k\n", e)
	assertMessages(t, err, "server: set only one of instance_token_key_file and instance_token_key_env")
}

func TestMetadataSettings(t *testing.T) {
	cert := testCertPEM(t)
	indented := "    " + strings.ReplaceAll(strings.TrimSpace(cert), "\n", "\n    ")
	cfg, err := parse(t, validYAML+"metadata:\n  runner_version: 2.330.1\n  ca_cert_bundle: |\n"+indented+"\n", defaultEnv())
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Metadata.RunnerVersion != "2.330.1" || strings.TrimSpace(cfg.Metadata.CACertBundle) != strings.TrimSpace(cert) {
		t.Fatalf("metadata = %+v", cfg.Metadata)
	}

	_, err = parse(t, validYAML+"metadata:\n  runner_version: latest\n  ca_cert_bundle: not pem\n", defaultEnv())
	assertMessages(t, err,
		`metadata.runner_version: "latest": want a release number such as 2.328.0`,
		"metadata.ca_cert_bundle: holds no PEM certificate")

	key := "-----BEGIN PRIVATE KEY-----\n    AAAA\n    -----END PRIVATE KEY-----"
	_, err = parse(t, validYAML+"metadata:\n  ca_cert_bundle: |\n    "+key+"\n", defaultEnv())
	assertMessages(t, err, `metadata.ca_cert_bundle: holds a "PRIVATE KEY" PEM block; only certificates belong there`)
}

func testCertPEM(t *testing.T) string {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(7), Subject: pkix.Name{CommonName: "test CA"},
		NotBefore: time.Now(), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
}
