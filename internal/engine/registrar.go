package engine

import (
	"errors"

	"github.com/runfleet/runfleet/internal/github"
)

// RegistrarOptions are what the registrar needs: the ledger's, and GitHub.
type RegistrarOptions struct {
	LedgerOptions
	GitHub github.GitHub
}

// Registrar is the ledger plus GitHub, where runners are registered and
// removed. The operator's deletes run on it (forcedelete.go): GitHub is
// asked first so a busy runner is refused at once. It never calls a
// provider — the delete itself runs in a worker — so a function that only
// takes operators' deletes (the forcedelete Lambda) builds no provider.
type Registrar struct {
	*Ledger
	github github.GitHub
}

// NewRegistrar checks the options and applies defaults.
func NewRegistrar(opts RegistrarOptions) (*Registrar, error) {
	if opts.GitHub == nil {
		return nil, errors.New("engine: no GitHub client")
	}
	ledger, err := NewLedger(opts.LedgerOptions)
	if err != nil {
		return nil, err
	}
	return &Registrar{Ledger: ledger, github: opts.GitHub}, nil
}
