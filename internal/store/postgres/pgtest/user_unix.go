//go:build unix

package pgtest

import (
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"strconv"
	"syscall"
)

// serverUserName owns the data directory and runs the server when the
// tests run as root: Debian's package creates it.
const serverUserName = "postgres"

// osUser is who runs initdb and postgres; nil fields mean "this process's
// user" (the tests do not run as root).
type osUser struct {
	name     string
	uid, gid uint32
	switched bool
}

// serverUser is this process's user, unless that is root, which
// PostgreSQL refuses: then the postgres user, created if absent.
func serverUser() (*osUser, error) {
	if os.Geteuid() != 0 {
		me, err := user.Current()
		if err != nil {
			return &osUser{name: strconv.Itoa(os.Geteuid())}, nil
		}
		return &osUser{name: me.Username}, nil
	}
	u, err := user.Lookup(serverUserName)
	if err != nil {
		if err := createUser(); err != nil {
			return nil, err
		}
		if u, err = user.Lookup(serverUserName); err != nil {
			return nil, fmt.Errorf("user %s still missing after useradd: %w", serverUserName, err)
		}
	}
	uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
	gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
	if err1 != nil || err2 != nil {
		return nil, fmt.Errorf("user %s has uid %q and gid %q: not numbers", serverUserName, u.Uid, u.Gid)
	}
	return &osUser{name: serverUserName, uid: uint32(uid), gid: uint32(gid), switched: true}, nil
}

// createUser adds the unprivileged system user PostgreSQL runs as, on a
// root machine without Debian's package setup.
func createUser() error {
	out, err := exec.Command("useradd", "--system", "--user-group", "--no-create-home",
		"--shell", "/usr/sbin/nologin", serverUserName).CombinedOutput()
	if err != nil {
		return fmt.Errorf("running as root, PostgreSQL needs an unprivileged user and %q is missing; useradd failed: %w\n%s",
			serverUserName, err, out)
	}
	return nil
}

// own gives path to the user.
func (u *osUser) own(path string) error {
	if !u.switched {
		return nil
	}
	return os.Chown(path, int(u.uid), int(u.gid))
}

// runAs makes cmd run as the user.
func (u *osUser) runAs(cmd *exec.Cmd) {
	if !u.switched {
		return
	}
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Credential = &syscall.Credential{Uid: u.uid, Gid: u.gid, NoSetGroups: true}
}
