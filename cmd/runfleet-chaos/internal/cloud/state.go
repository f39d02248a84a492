package cloud

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"syscall"
	"time"
)

// Machine is one machine the cloud runs.
type Machine struct {
	ProviderID string `json:"provider_id"`
	Name       string `json:"name"`
	// Pool is the GARM_POOL_ID it was created with.
	Pool      string    `json:"pool"`
	CreatedAt time.Time `json:"created_at"`
	// What runfleet's BootstrapInstance gave the machine to fetch its runner
	// configuration with; the driver plays the machine's boot with them.
	MetadataURL   string `json:"metadata_url,omitempty"`
	CallbackURL   string `json:"callback_url,omitempty"`
	InstanceToken string `json:"instance_token,omitempty"`
}

// State is everything in the cloud.
type State struct {
	NextID   int64     `json:"next_id"`
	Machines []Machine `json:"machines"`
	// Calls counts the calls made per command and instance, so every call
	// draws its own fault and a replay with the same seed draws the same.
	Calls map[string]int `json:"calls,omitempty"`
}

// Find returns the indexes of the machines id names: the one with that
// provider id, or — when none has it and byName — every one with that name.
func (s *State) Find(id string, byName bool) (idx []int, matchedByName bool) {
	if i := slices.IndexFunc(s.Machines, func(m Machine) bool { return m.ProviderID == id }); i >= 0 {
		return []int{i}, false
	}
	if !byName {
		return nil, false
	}
	for i, m := range s.Machines {
		if m.Name == id {
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

// Read returns the state under a shared lock.
func (c Config) Read() (State, error) {
	unlock, err := c.lock(syscall.LOCK_SH)
	if err != nil {
		return State{}, err
	}
	defer unlock()
	return c.readState()
}

// Update runs change on the state under the exclusive lock, then writes
// the state and appends the events change returns, still under the lock,
// so the event log's order is the order the changes happened in.
func (c Config) Update(change func(*State) []Event) error {
	unlock, err := c.lock(syscall.LOCK_EX)
	if err != nil {
		return err
	}
	defer unlock()
	s, err := c.readState()
	if err != nil {
		return err
	}
	events := change(&s)
	b, err := json.Marshal(s)
	if err != nil {
		return err
	}
	if err := writeAtomically(c.StateFile, b); err != nil {
		return fmt.Errorf("write cloud state: %w", err)
	}
	return appendEvents(c.EventLog, events)
}

// Hold runs fn under the exclusive lock with the current state: nothing in
// the cloud changes while fn runs. The driver uses it to hand a job to a
// machine only while that machine certainly exists.
func (c Config) Hold(fn func(State)) error {
	unlock, err := c.lock(syscall.LOCK_EX)
	if err != nil {
		return err
	}
	defer unlock()
	s, err := c.readState()
	if err != nil {
		return err
	}
	fn(s)
	return nil
}

func (c Config) readState() (State, error) {
	var s State
	b, err := os.ReadFile(c.StateFile)
	if errors.Is(err, fs.ErrNotExist) {
		return s, nil
	}
	if err != nil {
		return s, err
	}
	if err := json.Unmarshal(b, &s); err != nil {
		return s, fmt.Errorf("%s: %w", c.StateFile, err)
	}
	return s, nil
}

// lock takes an flock on the lock file. The kernel drops it when the
// holder dies, so a provider killed mid-call (runfleet's timeout, or
// runfleet itself killed) never leaves the cloud locked.
func (c Config) lock(how int) (unlock func(), err error) {
	f, err := os.OpenFile(c.LockFile, os.O_RDWR|os.O_CREATE, 0o600)
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
		return nil, fmt.Errorf("lock %s: %w", c.LockFile, err)
	}
	return func() { f.Close() }, nil
}
