package config

import (
	"slices"
	"strings"
)

// The store kinds. StoreBolt: one bbolt file under store.dir, holding the
// records and the work queue, which one process owns (its file lock).
// StorePostgres: a PostgreSQL database holding the records and the queue,
// which several serve processes may share; its DSN comes from
// store.dsn_file or store.dsn_env, never the YAML, because it carries the
// database password.
const (
	StoreBolt     = "bolt"
	StorePostgres = "postgres"
)

// StoreKinds are the store kinds `runfleet serve` can open.
var StoreKinds = []string{StoreBolt, StorePostgres}

func (s *Store) validate(p *problems) {
	if !slices.Contains(StoreKinds, s.Kind) {
		p.add("store.kind", "unknown kind %q (one of %s)", s.Kind, strings.Join(StoreKinds, ", "))
		return
	}
	dsn := s.DSNFile != "" || s.DSNEnv != ""
	switch s.Kind {
	case StoreBolt:
		if strings.TrimSpace(s.Dir) == "" {
			p.add("store.dir", "must not be blank (the directory of the bolt store's file)")
		}
		if dsn {
			p.add("store", "dsn_file and dsn_env are for kind postgres; kind bolt keeps its file in store.dir")
		}
	case StorePostgres:
		if s.DSNFile != "" && s.DSNEnv != "" {
			p.add("store", "set only one of dsn_file and dsn_env")
		}
		if !dsn {
			p.add("store", "kind postgres needs dsn_file or dsn_env: a file or environment variable holding the "+
				"database's DSN (postgres://user:password@host:5432/runfleet), never written in the YAML")
		}
		if s.Dir != "" {
			p.add("store.dir", "is for kind bolt; kind postgres keeps everything in the database")
		}
	}
}

// validateSharedStore holds a store several processes may share to what
// they must share: the instance token key cannot be one replica's
// generated file.
func (c *Config) validateSharedStore(p *problems) {
	if c.Store.Kind != StorePostgres || c.Server.PublicURL == "" {
		return
	}
	if c.Server.InstanceTokenKeyFile == "" && c.Server.InstanceTokenKeyEnv == "" {
		p.add("server", "with store.kind postgres and server.public_url set, give instance_token_key_file or "+
			"instance_token_key_env: every serve sharing the database must verify the tokens the others minted, "+
			"so the key cannot be one process's generated file (make one: openssl rand -hex 32)")
	}
}
