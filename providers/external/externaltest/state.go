package externaltest

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"syscall"
	"time"

	"github.com/cloudbase/garm-provider-common/params"
)

// Machine is one machine in the state file.
type Machine struct {
	// Pool is the GARM_POOL_ID it was created with.
	Pool     string                  `json:"pool"`
	Instance params.ProviderInstance `json:"instance"`
	// CreatedAt is when the provider made it.
	CreatedAt time.Time `json:"created_at"`
	// What runfleet's BootstrapInstance gave the machine to fetch its runner
	// configuration with (the chaos driver plays the machine's boot with
	// them).
	MetadataURL   string `json:"metadata_url,omitempty"`
	CallbackURL   string `json:"callback_url,omitempty"`
	InstanceToken string `json:"instance_token,omitempty"`
}

// State is the state file's content: every machine the provider runs.
type State struct {
	NextID   int       `json:"next_id"`
	Machines []Machine `json:"machines"`
	// Calls counts the calls made per command and instance, so every call
	// draws its own fault (Config.Draw) and a replay with the same seed
	// draws the same.
	Calls map[string]int `json:"calls,omitempty"`
}

// Find returns the indexes of the machines id names: the one with that
// provider id, or — when none has it and byName — every one with that name.
func (s *State) Find(id string, byName bool) (idx []int, matchedByName bool) {
	if i := slices.IndexFunc(s.Machines, func(m Machine) bool { return m.Instance.ProviderID == id }); i >= 0 {
		return []int{i}, false
	}
	if !byName {
		return nil, false
	}
	for i, m := range s.Machines {
		if m.Instance.Name == id {
			idx = append(idx, i)
		}
	}
	return idx, len(idx) > 0
}

// Remove deletes the machines at idx (as Find returns them).
func (s *State) Remove(idx []int) {
	gone := map[int]bool{}
	for _, i := range idx {
		gone[i] = true
	}
	kept := s.Machines[:0]
	for i, m := range s.Machines {
		if !gone[i] {
			kept = append(kept, m)
		}
	}
	s.Machines = kept
}

// ReadState reads a state file without its lock; a missing file is an
// empty state.
func ReadState(path string) (State, error) {
	var s State
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return s, nil
	}
	if err != nil {
		return s, err
	}
	if err := json.Unmarshal(data, &s); err != nil {
		return s, fmt.Errorf("%s: %w", path, err)
	}
	return s, nil
}

// Read returns the state under a shared lock.
func (c Config) Read() (State, error) {
	s, unlock, err := c.open(syscall.LOCK_SH)
	if err != nil {
		return State{}, err
	}
	unlock()
	return s, nil
}

// Update runs change on the state under the exclusive lock, then writes the
// state and appends the events change returns (Config.EventLog), still
// under the lock, so the event log's order is the order the changes
// happened in. It writes what change left even when change returns an
// error — a refused call is still counted — and then returns that error.
func (c Config) Update(change func(*State) ([]Event, error)) error {
	s, unlock, err := c.open(syscall.LOCK_EX)
	if err != nil {
		return err
	}
	defer unlock()
	events, changeErr := change(&s)
	data, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	if err := writeAtomically(c.StateFile, data); err != nil {
		return fmt.Errorf("write state: %w", err)
	}
	if c.EventLog != "" {
		if err := appendEvents(c.EventLog, events); err != nil {
			return err
		}
	}
	return changeErr
}

// Hold runs fn under the exclusive lock with the current state: nothing
// changes while fn runs. The chaos driver uses it to hand a job to a
// machine only while that machine certainly exists.
func (c Config) Hold(fn func(State)) error {
	s, unlock, err := c.open(syscall.LOCK_EX)
	if err != nil {
		return err
	}
	defer unlock()
	fn(s)
	return nil
}

// open takes the lock (syscall.LOCK_SH or LOCK_EX) and reads the state;
// the caller unlocks.
func (c Config) open(how int) (s State, unlock func(), err error) {
	if unlock, err = c.lock(how); err != nil {
		return State{}, nil, err
	}
	if s, err = ReadState(c.StateFile); err != nil {
		unlock()
		return State{}, nil, err
	}
	return s, unlock, nil
}

// lock takes an flock on <StateFile>.lock. The kernel drops it when the
// holder dies, so a provider killed mid-call (a caller's timeout, or
// runfleet itself killed) never leaves the state locked.
func (c Config) lock(how int) (unlock func(), err error) {
	path := c.StateFile + ".lock"
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	for {
		err = syscall.Flock(int(f.Fd()), how)
		if !errors.Is(err, syscall.EINTR) {
			break
		}
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	return func() { f.Close() }, nil
}

// writeAtomically replaces the file at path in one rename, so a reader
// sees the old content or the new, never half of one.
func writeAtomically(path string, data []byte) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
