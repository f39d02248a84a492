package scalesettest

// What a driver outside a test needs to play the runners of a scale set:
// which runners the scale set has, which scale set a listener made, and a
// JIT runner removing itself once its job is done.

// RunnerInfo is one runner registered in a scale set.
type RunnerInfo struct {
	ID    int64
	Name  string
	SetID int64
	Busy  bool
}

// Runners lists every runner registered in any scale set.
func (s *Server) Runners() []RunnerInfo {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]RunnerInfo, 0, len(s.runners))
	for _, r := range s.runners {
		out = append(out, RunnerInfo{ID: r.id, Name: r.name, SetID: r.setID, Busy: r.busy})
	}
	return out
}

// ScaleSetID returns the id of the scale set named name, as a listener
// made it, and whether there is one.
func (s *Server) ScaleSetID(name string) (int64, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, ss := range s.sets {
		if ss.name == name {
			return ss.id, true
		}
	}
	return 0, false
}

// RunnerLeaves plays an ephemeral runner deregistering itself after its
// job (or a runner removed by hand): it is gone from its scale set, busy
// or not. It reports whether the runner existed.
func (s *Server) RunnerLeaves(name string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for id, r := range s.runners {
		if r.name == name {
			delete(s.runners, id)
			return true
		}
	}
	return false
}

// JobState is the job's state as the fake tracks it (available,
// assigned, running, completed), or "" for an unknown job.
func (s *Server) JobState(requestID int64) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if j := s.jobs[requestID]; j != nil {
		return j.state
	}
	return ""
}
