package config_test

import (
	"strings"
	"testing"
)

const pemKey = "-----BEGIN RSA PRIVATE KEY-----\nAAAA\n-----END RSA PRIVATE KEY-----\n"

func withApps(t *testing.T, apps string) string {
	t.Helper()
	return replace(t, "  simulated: true\n", apps)
}

// Extra Apps lend their budget to the App: each key read like the App's,
// each problem named by its index.
func TestExtraApps(t *testing.T) {
	e := defaultEnv()
	e.env["KEY_1"], e.env["KEY_2"], e.env["KEY_3"] = pemKey, pemKey, pemKey
	cfg, err := parse(t, withApps(t, "  app: {id: 1, private_key_env: KEY_1}\n  extra_apps:\n    - {id: 2, private_key_env: KEY_2}\n    - {id: 3, private_key_env: KEY_3, installation_id: 7}\n"), e)
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.GitHub.ExtraApps) != 2 || string(cfg.GitHub.ExtraApps[1].PrivateKey) != pemKey || cfg.GitHub.ExtraApps[1].InstallationID != 7 {
		t.Fatalf("extra apps %v", cfg.GitHub.ExtraApps)
	}
	if s := cfg.GitHub.String(); strings.Contains(s, "AAAA") || !strings.Contains(s, "ExtraApps") {
		t.Fatalf("printed config %s: want the extra Apps, without their keys", s)
	}

	for _, tc := range []struct {
		name, apps, want string
	}{
		{"without the App", "  extra_apps:\n    - {id: 2, private_key_env: KEY_2}\n", "github.extra_apps: extra Apps lend their budget to github.app"},
		{"the App again", "  app: {id: 1, private_key_env: KEY_1}\n  extra_apps:\n    - {id: 1, private_key_env: KEY_2}\n", "github.extra_apps[0].id: App 1 is already github.app"},
		{"no key", "  app: {id: 1, private_key_env: KEY_1}\n  extra_apps:\n    - {id: 2}\n", "github.extra_apps[0]: set private_key_file or private_key_env"},
		{"a key not set", "  app: {id: 1, private_key_env: KEY_1}\n  extra_apps:\n    - {id: 2, private_key_env: NOPE}\n", "github.extra_apps[0].private_key"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parse(t, withApps(t, tc.apps), e)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v; want %q", err, tc.want)
			}
		})
	}
}
