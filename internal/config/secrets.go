package config

import (
	"encoding/pem"
	"fmt"
	"strings"
)

// sources reads secrets; Parse's callers choose them so that Lambda, tests
// and embedded mode each read from where they keep secrets.
type sources struct {
	lookupEnv func(string) (string, bool)
	readFile  func(string) ([]byte, error)
}

// MinInstanceTokenKeyBytes is the shortest instance token key accepted
// (HS256's output size).
const MinInstanceTokenKeyBytes = 32

// resolveSecrets fills Webhook.Secret, GitHub.Token, GitHub.App.PrivateKey,
// Server.APIToken, Server.InstanceTokenKey and Store.DSN. Problems name the field and the variable or file,
// never the value.
func (c *Config) resolveSecrets(src sources) problems {
	var p problems
	if c.Webhook.SecretFile != "" || c.Webhook.SecretEnv != "" {
		c.Webhook.Secret = src.read(&p, "webhook.secret", c.Webhook.SecretFile, c.Webhook.SecretEnv, true)
	}
	if c.GitHub.TokenFile != "" || c.GitHub.TokenEnv != "" {
		c.GitHub.Token = string(src.read(&p, "github.token", c.GitHub.TokenFile, c.GitHub.TokenEnv, true))
	}
	if app := c.GitHub.App; app != nil {
		app.readKey(&p, src, "github.app")
	}
	for i := range c.GitHub.ExtraApps {
		c.GitHub.ExtraApps[i].readKey(&p, src, fmt.Sprintf("github.extra_apps[%d]", i))
	}
	if c.Server.APITokenFile != "" || c.Server.APITokenEnv != "" {
		c.Server.APIToken = string(src.read(&p, "server.api_token", c.Server.APITokenFile, c.Server.APITokenEnv, true))
	}
	if c.Server.MetricsTokenFile != "" || c.Server.MetricsTokenEnv != "" {
		c.Server.MetricsToken = string(src.read(&p, "server.metrics_token", c.Server.MetricsTokenFile, c.Server.MetricsTokenEnv, true))
	}
	if c.Store.DSNFile != "" || c.Store.DSNEnv != "" {
		c.Store.DSN = string(src.read(&p, "store.dsn", c.Store.DSNFile, c.Store.DSNEnv, true))
	}
	if c.Server.InstanceTokenKeyFile != "" || c.Server.InstanceTokenKeyEnv != "" {
		key := src.read(&p, "server.instance_token_key", c.Server.InstanceTokenKeyFile, c.Server.InstanceTokenKeyEnv, true)
		if key != nil && len(key) < MinInstanceTokenKeyBytes {
			p.add(secretField("server.instance_token_key", c.Server.InstanceTokenKeyFile),
				"the key is %d bytes; use at least %d random bytes (e.g. openssl rand -hex 32)", len(key), MinInstanceTokenKeyBytes)
			key = nil
		}
		c.Server.InstanceTokenKey = key
	}
	return p
}

// read returns the secret from file, or else from the environment variable
// env; prefix+"_file" / prefix+"_env" are the fields that name them. It
// reports an unset variable, an unreadable file and an empty value. trim
// removes one trailing newline, which editors and `echo` add.
func (src sources) read(p *problems, prefix, file, env string, trim bool) []byte {
	field := secretField(prefix, file)
	var value []byte
	if file != "" {
		data, err := src.readFile(file)
		if err != nil {
			p.add(field, "cannot read %s: %v", file, err)
			return nil
		}
		value = data
	} else {
		v, ok := src.lookupEnv(env)
		if !ok {
			p.add(field, "environment variable %s is not set", env)
			return nil
		}
		value = []byte(v)
	}
	if trim {
		value = trimOneNewline(value)
	}
	if strings.TrimSpace(string(value)) == "" {
		if file != "" {
			p.add(field, "%s is empty", file)
		} else {
			p.add(field, "environment variable %s is empty", env)
		}
		return nil
	}
	return value
}

// secretField names the field a secret is read through.
func secretField(prefix, file string) string {
	if file != "" {
		return prefix + "_file"
	}
	return prefix + "_env"
}

func trimOneNewline(b []byte) []byte {
	if n := len(b); n > 0 && b[n-1] == '\n' {
		b = b[:n-1]
		if n := len(b); n > 0 && b[n-1] == '\r' {
			b = b[:n-1]
		}
	}
	return b
}

// readKey reads the App's private key (a PEM block, kept byte for byte),
// naming problems after field.
func (a *App) readKey(p *problems, src sources, field string) {
	if a.PrivateKeyFile == "" && a.PrivateKeyEnv == "" {
		return
	}
	a.PrivateKey = src.read(p, field+".private_key", a.PrivateKeyFile, a.PrivateKeyEnv, false)
	if a.PrivateKey != nil {
		if block, _ := pem.Decode(a.PrivateKey); block == nil {
			p.add(secretField(field+".private_key", a.PrivateKeyFile), "not a PEM-encoded private key")
		}
	}
}
