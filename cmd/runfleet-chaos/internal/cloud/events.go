package cloud

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"time"
)

// Event operations.
const (
	OpCreate = "create"
	OpDelete = "delete"
	// OpFault records a fault the provider injected (Fault says which).
	OpFault = "fault"
	// OpIgnoredDelete records a delete by name the provider pretended to do.
	OpIgnoredDelete = "ignored_delete"
)

// Event is one line of the event log.
type Event struct {
	At         time.Time `json:"at"`
	Op         string    `json:"op"`
	Command    string    `json:"command,omitempty"`
	Pool       string    `json:"pool,omitempty"`
	Name       string    `json:"name,omitempty"`
	ProviderID string    `json:"provider_id,omitempty"`
	Fault      Fault     `json:"fault,omitempty"`
	// PID is the provider process, to tell calls apart in the log.
	PID int `json:"pid,omitempty"`
}

func appendEvents(path string, events []Event) error {
	if len(events) == 0 {
		return nil
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	enc := json.NewEncoder(w)
	for _, e := range events {
		if err := enc.Encode(e); err != nil {
			f.Close()
			return err
		}
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// ReadEvents reads the whole event log, in the order it was written.
func ReadEvents(path string) ([]Event, error) {
	f, err := os.Open(path)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []Event
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for line := 1; sc.Scan(); line++ {
		var e Event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, line, err)
		}
		out = append(out, e)
	}
	return out, sc.Err()
}
