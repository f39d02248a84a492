package externaltest

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"slices"
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

// Event is one line of the event log (Config.EventLog): a change the
// provider made to its machines, or a fault it injected.
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

// History is what the event log says happened in the cloud.
type History struct {
	Creates, Deletes, IgnoredDeletes int
	// Faults counts injected faults by command and fault.
	Faults map[string]map[Fault]int
	// PeakLive is the most machines of each pool alive at once; PeakAt is
	// when that peak was first reached.
	PeakLive map[string]int
	PeakAt   map[string]time.Time
	// TwiceLive names every machine name that two live machines carried at
	// the same moment, sorted.
	TwiceLive []string
}

// Replay folds the event log, in its order, into a History.
func Replay(events []Event) History {
	h := History{Faults: map[string]map[Fault]int{}, PeakLive: map[string]int{}, PeakAt: map[string]time.Time{}}
	type machine struct{ pool, name string }
	live := map[string]machine{} // by provider id
	perPool := map[string]int{}
	perName := map[string]int{}
	twice := map[string]bool{}
	for _, e := range events {
		switch e.Op {
		case OpCreate:
			h.Creates++
			if _, dup := live[e.ProviderID]; dup {
				continue
			}
			live[e.ProviderID] = machine{e.Pool, e.Name}
			perPool[e.Pool]++
			perName[e.Name]++
			if perName[e.Name] > 1 {
				twice[e.Name] = true
			}
			if perPool[e.Pool] > h.PeakLive[e.Pool] {
				h.PeakLive[e.Pool] = perPool[e.Pool]
				h.PeakAt[e.Pool] = e.At
			}
		case OpDelete:
			h.Deletes++
			m, ok := live[e.ProviderID]
			if !ok {
				continue
			}
			delete(live, e.ProviderID)
			perPool[m.pool]--
			perName[m.name]--
		case OpIgnoredDelete:
			h.IgnoredDeletes++
		case OpFault:
			if h.Faults[e.Command] == nil {
				h.Faults[e.Command] = map[Fault]int{}
			}
			h.Faults[e.Command][e.Fault]++
		}
	}
	for name := range twice {
		h.TwiceLive = append(h.TwiceLive, name)
	}
	slices.Sort(h.TwiceLive)
	return h
}
