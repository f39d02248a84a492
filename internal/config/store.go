package config

import (
	"slices"
	"strings"
)

// StoreBolt is the one store kind today: one bbolt file under store.dir,
// holding the records and the work queue, which one process owns (its
// file lock). A store several serve replicas share (PostgreSQL) will be
// another kind beside it.
const StoreBolt = "bolt"

// StoreKinds are the store kinds `runfleet serve` can open.
var StoreKinds = []string{StoreBolt}

func (s *Store) validate(p *problems) {
	if !slices.Contains(StoreKinds, s.Kind) {
		p.add("store.kind", "unknown kind %q (one of %s)", s.Kind, strings.Join(StoreKinds, ", "))
		return
	}
	if s.Kind == StoreBolt && strings.TrimSpace(s.Dir) == "" {
		p.add("store.dir", "must not be blank (the directory of the bolt store's file)")
	}
}
