package sim

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/runfleet/runfleet/internal/github/scaleset"
)

// The Actions service of runner scale sets, as the listener meets it
// (docs/scale-sets.md): a scale set per name, each with a message queue
// whose messages carry job events and the statistics of that moment, held
// until acknowledged; one message session at a time per scale set (a
// second create answers 409 until the first is deleted, or expires
// ssSessionTTL after its last poll); long polls that wait up to 50 s of
// virtual time. The listener reaches it in-process (actionsClient,
// ssSession), not over HTTP: the wire is internal/github/scaleset's own
// tests' business (scalesettest), and the simulation's turns and clock
// could not reach into an HTTP server.

const (
	// ssSessionTTL: a session nobody polls expires this long after its
	// last poll (GitHub does not document it; reports say minutes).
	ssSessionTTL = 3 * time.Minute
	// ssPollWindow is how long a poll waits for a message before a 202.
	ssPollWindow = 50 * time.Second
	// ssMessageMax is the most job events one message carries.
	ssMessageMax = 50
)

// actionsService is GitHub's Actions service for the organization's scale
// sets. It outlives runfleet's process, as GitHub does.
type actionsService struct {
	w   *world
	cfg ScaleSetConfig
	// sets are every scale set ever made, in creation order; at most one
	// per name is not deleted.
	sets      []*ssScaleSet
	nextSetID int64
	nextSess  int
	// jobs are the scale-set jobs; byLedger indexes them by the ledger id
	// their runner request gives them.
	jobs     []*ghJob
	byLedger map[int64]*ghJob
	nextRR   int64
	// poller is the task in a poll on the scale set, if any
	// (checkPollers).
	poller *task
	watch  *restartWatch
}

type ssScaleSet struct {
	id      int64
	name    string
	labels  []string
	deleted bool
	// msgs are the messages held: not yet acknowledged, ascending ids.
	msgs    []*ssMessage
	nextMsg int64
	// last is the message a poll answered last (a duplicate repeats it);
	// delivered are all the messages a poll ever answered, acknowledged
	// or not, which a late duplicate copies.
	last      *ssMessage
	delivered []*ssMessage
	session   *ssSessionState
	// capacity is the X-ScaleSetMaxCapacity of the last poll: GitHub
	// assigns the scale set no more jobs than that at once.
	capacity int
	// waiting is the poll waiting for a message, if any: a new message,
	// or the scale set's deletion, ends its wait.
	waiting *nap
}

// wakePoll ends a waiting poll's wait: something it answers changed.
func (set *ssScaleSet) wakePoll() {
	if set.waiting != nil {
		set.waiting.wake()
		set.waiting = nil
	}
}

type ssSessionState struct {
	id, owner  string
	lastActive time.Time
	polls      int
}

type ssMessage struct {
	id        int64
	events    []scaleset.Event
	stats     scaleset.Statistics
	delivered bool
	// finished are the jobs whose final JobCompleted the message carries:
	// its acknowledgement is runfleet hearing they finished.
	finished []*ghJob
}

func newActionsService(w *world, cfg ScaleSetConfig) *actionsService {
	return &actionsService{w: w, cfg: cfg, nextSetID: 40, byLedger: map[int64]*ghJob{}, nextRR: 7000}
}

// live is the scale set of the name that exists now, if any.
func (s *actionsService) live() *ssScaleSet {
	for i := len(s.sets) - 1; i >= 0; i-- {
		if set := s.sets[i]; !set.deleted {
			return set
		}
	}
	return nil
}

// sessionLive: the session holds its scale set (a create answers 409).
func (s *actionsService) sessionLive(sess *ssSessionState) bool {
	return sess != nil && (sess.polls > 0 || s.w.now().Sub(sess.lastActive) < ssSessionTTL)
}

// statistics are the scale set's counters now: jobs assigned to it and
// not finished (a canceled assignment GitHub will assign again stays
// counted), those running, and its runners.
func (s *actionsService) statistics(set *ssScaleSet) scaleset.Statistics {
	var st scaleset.Statistics
	for _, j := range s.jobs {
		if j.ss.set != set || !j.ss.counted || j.Status == jobCompleted {
			continue
		}
		st.TotalAssignedJobs++
		if j.Status == jobInProgress {
			st.TotalRunningJobs++
		}
	}
	for _, r := range s.w.gh.runners {
		if r.set != set || !r.registered {
			continue
		}
		st.TotalRegisteredRunners++
		if r.busy() {
			st.TotalBusyRunners++
		} else {
			st.TotalIdleRunners++
		}
	}
	return st
}

// post puts a job event in the scale set's queue: in the newest message
// while no poll has answered it yet and it has room, else in a new one.
// The message's statistics are those of the moment. It returns the
// message, nil when the scale set is gone.
func (s *actionsService) post(set *ssScaleSet, ev scaleset.Event, what string) *ssMessage {
	if set == nil || set.deleted {
		return nil
	}
	var m *ssMessage
	if n := len(set.msgs); n > 0 && !set.msgs[n-1].delivered && len(set.msgs[n-1].events) < ssMessageMax {
		m = set.msgs[n-1]
	} else {
		set.nextMsg++
		m = &ssMessage{id: set.nextMsg}
		set.msgs = append(set.msgs, m)
	}
	m.events = append(m.events, ev)
	m.stats = s.statistics(set)
	set.wakePoll()
	s.w.stats.inc("scaleset.events." + what)
	s.w.tr.add("actions: scale set %d message %d += %s rr %d (assigned %d running %d)", set.id, m.id, what, ev.Job().RunnerRequestID, m.stats.TotalAssignedJobs, m.stats.TotalRunningJobs)
	return m
}

// next is the first held message after last.
func (set *ssScaleSet) next(last int64) *ssMessage {
	for _, m := range set.msgs {
		if m.id > last {
			return m
		}
	}
	return nil
}

func (m *ssMessage) message() *scaleset.Message {
	return &scaleset.Message{ID: m.id, Type: scaleset.JobMessagesType, Statistics: m.stats, Events: slices.Clone(m.events)}
}

// ack deletes a held message; runfleet has heard of the jobs it says
// finished.
func (s *actionsService) ack(set *ssScaleSet, id int64) {
	set.msgs = slices.DeleteFunc(set.msgs, func(m *ssMessage) bool {
		if m.id != id {
			return false
		}
		for _, j := range m.finished {
			s.w.gh.heardFinished(j)
		}
		return true
	})
}

// lateCopy is a copy of a message a poll answered before, chosen at
// random: the broker delivering it again after later ones. It carries
// the statistics of now, as every answer does.
func (s *actionsService) lateCopy(set *ssScaleSet) *scaleset.Message {
	m := set.delivered[s.w.rng.IntN(len(set.delivered))]
	out := m.message()
	out.Statistics = s.statistics(set)
	return out
}

// ensure is EnsureScaleSet's effect: the scale set of the name, made anew
// (a new id, an empty queue) when GitHub deleted it or it never existed;
// jobs waiting for a scale set of that name are assigned to the new one.
func (s *actionsService) ensure(name string, labels []string) *ssScaleSet {
	if set := s.live(); set != nil && set.name == name {
		set.labels = labels
		return set
	}
	s.nextSetID++
	set := &ssScaleSet{id: s.nextSetID, name: name, labels: labels, capacity: s.w.maxRunners(ssPool)}
	s.sets = append(s.sets, set)
	s.w.stats.inc("scaleset.created")
	s.w.tr.add("actions: scale set %s created, id %d", name, set.id)
	s.w.gh.assignSoon()
	return set
}

// deleteSet is GitHub deleting the scale set under the listener: its
// session, queue and idle runners go; jobs assigned to it wait for a
// scale set of the name again. GitHub deletes idle scale sets only, so a
// scale set with a runner holding a job is tried again a minute later;
// messages not yet acknowledged go with the queue (F25).
func (s *actionsService) deleteSet() {
	w := s.w
	set := s.live()
	if set == nil || !w.faultsOn {
		return
	}
	for _, r := range w.gh.runners {
		if r.set == set && r.registered && r.busy() {
			w.sched.after(time.Minute, 0, s.deleteSet)
			return
		}
	}
	set.deleted, set.session, set.msgs = true, nil, nil
	set.wakePoll()
	for _, r := range w.gh.runners {
		if r.set == set && r.registered {
			w.gh.deregister(r)
		}
	}
	for _, j := range s.jobs {
		if j.ss.set == set && j.Status != jobCompleted {
			j.ss.set, j.ss.counted, j.ss.takeable = nil, false, false
		}
	}
	s.watchFault()
	w.stats.inc("fault.scaleset.deleted")
	w.tr.add("actions: scale set %s (id %d) deleted by GitHub", set.name, set.id)
}

// ssError is the error the scale-set client returns for an answer.
func ssError(op string, kind error, status int) error {
	return &scaleset.Error{Op: op, Kind: kind, StatusCode: status}
}

// call is one Actions-service call's round trip for process p: a turn
// given back, the fault model (5xx before the effect, a slow answer), and
// the answer's latency. after says a 5xx after the effect was drawn.
func (s *actionsService) call(ctx context.Context, p *process, op string) (after bool, err error) {
	w := s.w
	if err := p.enter(ctx); err != nil {
		return false, errNotSent
	}
	w.stats.inc("scaleset.calls." + op)
	f := s.cfg.Faults
	latency := between(w.rng, 30*time.Millisecond, 300*time.Millisecond)
	if w.faultsOn {
		switch x := w.rng.Float64(); {
		case x < f.ServerError:
			w.stats.inc("fault.scaleset.5xx." + op)
			w.tr.add("actions %s -> 503", op)
			s.watchFault()
			err = ssError(op, scaleset.ErrServer, 503)
		case x < f.ServerError+f.ErrorAfterEffect:
			after = true
		}
		if chance(w.rng, f.Slow) {
			w.stats.inc("fault.scaleset.slow")
			// A slow GitHub can hold a restarted listener past its bound
			// by itself (two answers of 40 s), as any fault can.
			s.watchFault()
			latency = between(w.rng, 5*time.Second, 40*time.Second)
		}
	}
	if serr := p.sleep(ctx, latency); serr != nil {
		return false, serr
	}
	return after, err
}

// afterEffect answers a call that took effect: a 5xx if one was drawn.
func (s *actionsService) afterEffect(op string, after bool) error {
	if !after {
		return nil
	}
	s.w.stats.inc("fault.scaleset.5xx_after_effect." + op)
	s.w.tr.add("actions %s took effect but answered 500", op)
	s.watchFault()
	return ssError(op, scaleset.ErrServer, 500)
}

// died settles a call cut off by the process's death: the request may
// have reached GitHub.
func (s *actionsService) died(err error, effect func()) error {
	if err == errKilled && s.w.rng.IntN(2) == 0 {
		effect()
	}
	return err
}

// newSession opens a session on set for owner.
func (s *actionsService) newSession(set *ssScaleSet, owner string) *ssSessionState {
	s.nextSess++
	sess := &ssSessionState{id: fmt.Sprintf("sess-%d", s.nextSess), owner: owner, lastActive: s.w.now()}
	set.session = sess
	s.w.stats.inc("scaleset.sessions_created")
	s.w.tr.add("actions: session %s opened on scale set %d for %s", sess.id, set.id, owner)
	return sess
}

// setByID is the scale set with id, unless GitHub deleted it.
func (s *actionsService) setByID(id int64) *ssScaleSet {
	for _, set := range s.sets {
		if set.id == id && !set.deleted {
			return set
		}
	}
	return nil
}

// labelsOf are a scale set's labels as GitHub keeps them: the spec's, and
// its name when missing.
func labelsOf(spec scaleset.ScaleSetSpec) []string {
	labels := slices.Clone(spec.Labels)
	if !slices.ContainsFunc(labels, func(l string) bool { return strings.EqualFold(l, spec.Name) }) {
		labels = append(labels, spec.Name)
	}
	return labels
}
