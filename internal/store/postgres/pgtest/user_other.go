//go:build !unix

package pgtest

import (
	"errors"
	"os/exec"
)

type osUser struct{ name string }

func serverUser() (*osUser, error) {
	return nil, errors.New("starting a PostgreSQL server for the tests needs a unix system")
}

func (u *osUser) own(string) error { return nil }
func (u *osUser) runAs(*exec.Cmd)  {}
