package config

import (
	"fmt"
	"log/slog"
)

// The types holding resolved secrets print and log without them, so that
// logging a Config (slog, %v or %+v) can never leak one; the secret fields
// are also tagged json:"-" for slog's JSON handler and any JSON encoding.

const redacted = "[redacted]"

func mask(set bool) string {
	if set {
		return redacted
	}
	return ""
}

// String prints the webhook settings without the secret.
func (w Webhook) String() string {
	return fmt.Sprintf("{SecretFile:%s SecretEnv:%s Secret:%s MaxBodyBytes:%d}",
		w.SecretFile, w.SecretEnv, mask(len(w.Secret) > 0), w.MaxBodyBytes)
}

// LogValue logs the webhook settings without the secret.
func (w Webhook) LogValue() slog.Value {
	return slog.GroupValue(
		slog.String("secret_file", w.SecretFile),
		slog.String("secret_env", w.SecretEnv),
		slog.String("secret", mask(len(w.Secret) > 0)),
		slog.Int64("max_body_bytes", w.MaxBodyBytes),
	)
}

// String prints the server settings without the API token or the instance
// token key.
func (s Server) String() string {
	return fmt.Sprintf("{Listen:%s PublicURL:%s APITokenFile:%s APITokenEnv:%s APIToken:%s "+
		"InstanceTokenKeyFile:%s InstanceTokenKeyEnv:%s InstanceTokenKey:%s "+
		"MetricsAddress:%s MetricsTokenFile:%s MetricsTokenEnv:%s MetricsToken:%s}",
		s.Listen, s.PublicURL, s.APITokenFile, s.APITokenEnv, mask(s.APIToken != ""),
		s.InstanceTokenKeyFile, s.InstanceTokenKeyEnv, mask(len(s.InstanceTokenKey) > 0),
		s.MetricsAddress, s.MetricsTokenFile, s.MetricsTokenEnv, mask(s.MetricsToken != ""))
}

// LogValue logs the server settings without the API token or the instance
// token key.
func (s Server) LogValue() slog.Value {
	return slog.GroupValue(
		slog.String("listen", s.Listen),
		slog.String("public_url", s.PublicURL),
		slog.String("api_token_file", s.APITokenFile),
		slog.String("api_token_env", s.APITokenEnv),
		slog.String("api_token", mask(s.APIToken != "")),
		slog.String("instance_token_key_file", s.InstanceTokenKeyFile),
		slog.String("instance_token_key_env", s.InstanceTokenKeyEnv),
		slog.String("instance_token_key", mask(len(s.InstanceTokenKey) > 0)),
		slog.String("metrics_address", s.MetricsAddress),
		slog.String("metrics_token_file", s.MetricsTokenFile),
		slog.String("metrics_token_env", s.MetricsTokenEnv),
		slog.String("metrics_token", mask(s.MetricsToken != "")),
	)
}

// String prints the GitHub settings without the token or private key.
func (g GitHub) String() string {
	return fmt.Sprintf("{Simulated:%t BaseURL:%s App:%v ExtraApps:%v TokenFile:%s TokenEnv:%s Token:%s}",
		g.Simulated, g.BaseURL, g.App, g.ExtraApps, g.TokenFile, g.TokenEnv, mask(g.Token != ""))
}

// LogValue logs the GitHub settings without the token or private key.
func (g GitHub) LogValue() slog.Value {
	attrs := []slog.Attr{
		slog.Bool("simulated", g.Simulated),
		slog.String("base_url", g.BaseURL),
		slog.String("token_file", g.TokenFile),
		slog.String("token_env", g.TokenEnv),
		slog.String("token", mask(g.Token != "")),
	}
	if g.App != nil {
		attrs = append(attrs, slog.Any("app", *g.App))
	}
	for i, a := range g.ExtraApps {
		attrs = append(attrs, slog.Any(fmt.Sprintf("extra_apps[%d]", i), a))
	}
	return slog.GroupValue(attrs...)
}

// String prints the App settings without the private key.
func (a App) String() string {
	return fmt.Sprintf("{ID:%d InstallationID:%d PrivateKeyFile:%s PrivateKeyEnv:%s PrivateKey:%s}",
		a.ID, a.InstallationID, a.PrivateKeyFile, a.PrivateKeyEnv, mask(len(a.PrivateKey) > 0))
}

// LogValue logs the App settings without the private key.
func (a App) LogValue() slog.Value {
	return slog.GroupValue(
		slog.Int64("id", a.ID),
		slog.Int64("installation_id", a.InstallationID),
		slog.String("private_key_file", a.PrivateKeyFile),
		slog.String("private_key_env", a.PrivateKeyEnv),
		slog.String("private_key", mask(len(a.PrivateKey) > 0)),
	)
}

// String prints the store settings without the DSN, which holds the
// database password.
func (s Store) String() string {
	return fmt.Sprintf("{Kind:%s Dir:%s DSNFile:%s DSNEnv:%s DSN:%s}", s.Kind, s.Dir, s.DSNFile, s.DSNEnv, mask(s.DSN != ""))
}

// LogValue logs the store settings without the DSN.
func (s Store) LogValue() slog.Value {
	return slog.GroupValue(
		slog.String("kind", s.Kind),
		slog.String("dir", s.Dir),
		slog.String("dsn_file", s.DSNFile),
		slog.String("dsn_env", s.DSNEnv),
		slog.String("dsn", mask(s.DSN != "")),
	)
}
