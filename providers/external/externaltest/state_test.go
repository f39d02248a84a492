package externaltest

import (
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/cloudbase/garm-provider-common/params"
)

func testConfig(t *testing.T) Config {
	dir := t.TempDir()
	return Config{
		StateFile: filepath.Join(dir, "state.json"),
		EventLog:  filepath.Join(dir, "events.jsonl"),
		Seed:      7,
	}
}

func TestReplayPeakAndTwiceLive(t *testing.T) {
	at := time.Unix(0, 0)
	events := []Event{
		{Op: OpCreate, Pool: "p", Name: "a", ProviderID: "1", At: at},
		{Op: OpCreate, Pool: "p", Name: "b", ProviderID: "2", At: at.Add(1)},
		{Op: OpDelete, Pool: "p", Name: "a", ProviderID: "1"},
		{Op: OpCreate, Pool: "p", Name: "a", ProviderID: "3"},
		{Op: OpCreate, Pool: "p", Name: "b", ProviderID: "4", At: at.Add(4)},
		{Op: OpCreate, Pool: "q", Name: "c", ProviderID: "5"},
		{Op: OpDelete, Pool: "p", Name: "x", ProviderID: "unknown"},
		{Op: OpFault, Command: "CreateInstance", Fault: FailAfter},
	}
	h := Replay(events)
	if h.PeakLive["p"] != 3 || !h.PeakAt["p"].Equal(at.Add(4)) || h.PeakLive["q"] != 1 {
		t.Errorf("peaks = %v at %v, want p:3 at +4ns, q:1", h.PeakLive, h.PeakAt)
	}
	if len(h.TwiceLive) != 1 || h.TwiceLive[0] != "b" {
		t.Errorf("TwiceLive = %v, want [b] (a's two machines never lived at once)", h.TwiceLive)
	}
	if h.Creates != 5 || h.Deletes != 2 || h.Faults["CreateInstance"][FailAfter] != 1 {
		t.Errorf("counts = %+v", h)
	}
}

func TestDrawIsRepeatableAndNearItsRates(t *testing.T) {
	c := Config{Seed: 42, FailRate: 0.3, HangRate: 0.02}
	counts := map[Fault]int{}
	const n = 20000
	for i := range n {
		f := c.Draw("CreateInstance", "runfleet-x-"+string(rune('a'+i%26)), i)
		if f != c.Draw("CreateInstance", "runfleet-x-"+string(rune('a'+i%26)), i) {
			t.Fatal("the same call drew two different faults")
		}
		counts[f]++
	}
	fail := float64(counts[FailBefore]+counts[FailAfter]) / n
	hang := float64(counts[HangBefore]+counts[HangAfter]) / n
	if fail < 0.27 || fail > 0.33 || hang < 0.01 || hang > 0.03 {
		t.Errorf("fail %.3f hang %.3f, want about 0.30 and 0.02 (%v)", fail, hang, counts)
	}
	if counts[FailBefore] == 0 || counts[FailAfter] == 0 || counts[HangBefore] == 0 || counts[HangAfter] == 0 {
		t.Errorf("every kind of fault should occur: %v", counts)
	}
	if (Config{Seed: 42}).Draw("CreateInstance", "a", 1) != NoFault {
		t.Error("zero rates must never fault")
	}
}

func TestUpdateIsSerialised(t *testing.T) {
	c := testConfig(t)
	var wg sync.WaitGroup
	for range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := c.Update(func(s *State) ([]Event, error) {
				s.NextID++
				s.Machines = append(s.Machines, Machine{Instance: params.ProviderInstance{ProviderID: string(rune('A' + s.NextID)), Name: "m"}})
				return []Event{{Op: OpCreate, Name: "m"}}, nil
			})
			if err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	s, err := c.Read()
	if err != nil {
		t.Fatal(err)
	}
	events, err := ReadEvents(c.EventLog)
	if err != nil {
		t.Fatal(err)
	}
	if s.NextID != 20 || len(s.Machines) != 20 || len(events) != 20 {
		t.Errorf("next id %d, %d machines, %d events; want 20 each (a lost update)", s.NextID, len(s.Machines), len(events))
	}
	idx, byName := s.Find("m", true)
	if len(idx) != 20 || !byName {
		t.Errorf("Find by name = %d machines, byName %v", len(idx), byName)
	}
	s.Remove(idx[:5])
	if len(s.Machines) != 15 {
		t.Errorf("Remove left %d, want 15", len(s.Machines))
	}
}
