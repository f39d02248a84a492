package config

import (
	"errors"
	"fmt"
	"os"
)

// Load reads, validates and resolves the config file at path. Secrets come
// from the process environment and files; relative paths in the config are
// relative to the working directory.
func Load(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("load config: %w", err)
	}
	cfg, err := Parse(data, os.LookupEnv, os.ReadFile)
	if err != nil {
		return nil, fmt.Errorf("config %s is invalid:\n%w", path, err)
	}
	return cfg, nil
}

// Parse decodes YAML (unknown fields are errors), applies defaults,
// validates, and resolves the secrets through lookupEnv and readFile (nil
// means os.LookupEnv / os.ReadFile). On failure the error joins a
// *FieldError for every problem found, not just the first: the file's
// unknown keys and badly typed values, then every setting that is invalid
// among those that could be read, so one run lists everything to fix. No
// error ever contains a secret's value.
func Parse(data []byte, lookupEnv func(string) (string, bool), readFile func(string) ([]byte, error)) (*Config, error) {
	src := sources{lookupEnv: lookupEnv, readFile: readFile}
	if src.lookupEnv == nil {
		src.lookupEnv = os.LookupEnv
	}
	if src.readFile == nil {
		src.readFile = os.ReadFile
	}
	d, err := decode(data)
	if err != nil {
		return nil, err
	}
	cfg := d.cfg
	cfg.applyDefaults()
	found := cfg.validate()
	found = append(found, cfg.resolveSecrets(src)...)
	found = append(d.problems, d.keep(found)...)
	if len(found) > 0 {
		return nil, errors.Join(found...)
	}
	return cfg, nil
}
