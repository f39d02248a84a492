package cloud

import (
	"slices"
	"time"
)

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
