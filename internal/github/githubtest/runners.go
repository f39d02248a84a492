package githubtest

import (
	"slices"
	"sort"
	"strings"
)

// Runner statuses as GitHub reports them.
const (
	StatusOnline  = "online"
	StatusOffline = "offline"
)

// Runner is a registered self-hosted runner.
type Runner struct {
	ID int64
	// Owner is "org", "org/repo" or "enterprise:slug".
	Owner     string
	Name      string
	OS        string // "unknown" until the runner connects
	Status    string // StatusOnline or StatusOffline
	Busy      bool
	Labels    []string
	GroupID   int64
	Ephemeral bool
	// JobID is the workflow job the runner is running (StartJob), or 0.
	JobID int64
	// EncodedJITConfig is set for runners registered by generate-jitconfig.
	EncodedJITConfig string
}

func (r *Runner) clone() Runner {
	c := *r
	c.Labels = slices.Clone(r.Labels)
	return c
}

// AddRunner registers a runner directly, as one configured by hand or by
// another controller would be. ID is assigned when 0; Owner must have been
// added; GroupID defaults to the default group, Status to offline, OS to
// "linux".
func (s *Server) AddRunner(r Runner) Runner {
	s.mu.Lock()
	defer s.mu.Unlock()
	o, err := s.lookupOwner(r.Owner)
	if err != nil {
		s.t.Errorf("githubtest: AddRunner(%q): %v", r.Name, err)
		return Runner{}
	}
	r.Owner = o.key
	if r.ID == 0 {
		r.ID = s.newRunnerID()
	}
	if r.GroupID == 0 {
		r.GroupID = DefaultRunnerGroupID
	}
	if r.Status == "" {
		r.Status = StatusOffline
	}
	if r.OS == "" {
		r.OS = "linux"
	}
	stored := r.clone()
	s.runners[r.ID] = &stored
	return stored.clone()
}

func (s *Server) newRunnerID() int64 {
	id := s.nextRunnerID
	s.nextRunnerID++
	return id
}

// Runners lists every registered runner, ordered by id.
func (s *Server) Runners() []Runner {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Runner, 0, len(s.runners))
	for _, r := range s.runners {
		out = append(out, r.clone())
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// RunnerByName finds a registered runner by name (GitHub compares runner
// names case-insensitively) at any owner.
func (s *Server) RunnerByName(name string) (Runner, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r := s.runnerNamed(name); r != nil {
		return r.clone(), true
	}
	return Runner{}, false
}

func (s *Server) runnerNamed(name string) *Runner {
	for _, r := range s.runners {
		if strings.EqualFold(r.Name, name) {
			return r
		}
	}
	return nil
}

// runnerAt finds a runner by name at one owner.
func (s *Server) runnerAt(ownerKey, name string) *Runner {
	for _, r := range s.runners {
		if r.Owner == ownerKey && strings.EqualFold(r.Name, name) {
			return r
		}
	}
	return nil
}

// ownerRunners lists an owner's runners by id.
func (s *Server) ownerRunners(ownerKey, nameFilter string) []*Runner {
	var out []*Runner
	for _, r := range s.runners {
		if r.Owner == ownerKey && (nameFilter == "" || strings.EqualFold(r.Name, nameFilter)) {
			out = append(out, r)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// SetBusy marks the runner named name as running a job (busy runners are
// online) or idle. It reports whether the runner exists.
func (s *Server) SetBusy(name string, busy bool) bool {
	return s.updateRunner(name, func(r *Runner) {
		r.Busy = busy
		if busy {
			r.Status = StatusOnline
		}
	})
}

func (s *Server) updateRunner(name string, change func(*Runner)) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.runnerNamed(name)
	if r == nil {
		return false
	}
	change(r)
	return true
}

// ConnectRunner plays a machine booting with a JIT config: the runner it
// registered comes online. It reports the runner, or false when no runner
// holds that config (never issued, or the runner is gone).
func (s *Server) ConnectRunner(encodedJITConfig string) (Runner, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.runners[s.jitConfigs[encodedJITConfig]]
	if !ok {
		return Runner{}, false
	}
	r.Status = StatusOnline
	if r.OS == "unknown" {
		r.OS = "linux"
	}
	return r.clone(), true
}

func (s *Server) deleteRunner(r *Runner) {
	delete(s.runners, r.ID)
	if r.EncodedJITConfig != "" {
		delete(s.jitConfigs, r.EncodedJITConfig)
	}
}

// FinishRunner plays a runner finishing its job: the job (if any) completes
// with conclusion "success"; an ephemeral (JIT) runner then removes itself,
// any other runner goes idle. It reports whether the runner existed.
func (s *Server) FinishRunner(name string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.runnerNamed(name)
	if r == nil {
		return false
	}
	if j, ok := s.jobs[r.JobID]; ok && j.Status != JobCompleted {
		s.completeJob(j, "success")
	}
	s.releaseRunner(r)
	return true
}

// releaseRunner ends a runner's job on the runner's side.
func (s *Server) releaseRunner(r *Runner) {
	r.Busy = false
	r.JobID = 0
	if r.Ephemeral {
		s.deleteRunner(r)
	}
}

// labelType is how GitHub classifies a runner label: the ones the runner
// application applies itself are read-only, the rest custom.
func labelType(name string) string {
	switch strings.ToLower(name) {
	case "self-hosted", "linux", "windows", "macos", "x64", "arm", "arm64":
		return "read-only"
	default:
		return "custom"
	}
}

// labelID gives every distinct label name a stable id, as GitHub does.
func (s *Server) labelID(name string) int64 {
	key := strings.ToLower(name)
	if id, ok := s.labelIDs[key]; ok {
		return id
	}
	id := s.nextLabelID
	s.nextLabelID++
	s.labelIDs[key] = id
	return id
}
