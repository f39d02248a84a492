package scalesettest

import (
	"encoding/json"
	"net/http"
	"strconv"
	"time"
)

// getMessage is the long poll: the oldest unacknowledged message after
// lastMessageId, waiting up to PollWindow for one, else 202.
func (s *Server) getMessage(w http.ResponseWriter, r *http.Request) {
	capacity, err := strconv.Atoi(r.Header.Get("X-ScaleSetMaxCapacity"))
	if err != nil || capacity < 0 {
		writeException(w, http.StatusBadRequest, "ArgumentException", "X-ScaleSetMaxCapacity must be a number ≥ 0")
		return
	}
	var last int64
	if v := r.URL.Query().Get("lastMessageId"); v != "" {
		if last, err = strconv.ParseInt(v, 10, 64); err != nil {
			writeException(w, http.StatusBadRequest, "ArgumentException", "lastMessageId must be a number")
			return
		}
	}
	window := time.NewTimer(s.opts.PollWindow)
	defer window.Stop()
	for {
		s.mu.Lock()
		ss := s.queueSessionLocked(r)
		if ss == nil {
			s.mu.Unlock()
			// guess: the queue's 401 body is not documented.
			http.Error(w, "queue token expired or invalid", http.StatusUnauthorized)
			return
		}
		ss.lastActive = s.nowLocked()
		if q := s.nextMessageLocked(ss.setID, last); q != nil {
			q.deliveries++
			body, _ := json.Marshal(q.events)
			out := map[string]any{
				"messageId": q.id, "messageType": "RunnerScaleSetJobMessages",
				"body": string(body), "statistics": s.statisticsLocked(ss.setID),
			}
			s.mu.Unlock()
			writeJSON(w, http.StatusOK, out)
			return
		}
		changed := s.changed
		s.mu.Unlock()
		select {
		case <-changed:
		case <-window.C:
			w.WriteHeader(http.StatusAccepted)
			return
		case <-r.Context().Done():
			return
		}
	}
}

// nextMessageLocked picks what to deliver: a message armed to come again
// (DeliverTwice), else the oldest unacknowledged one after last.
func (s *Server) nextMessageLocked(setID, last int64) *queued {
	set := s.sets[setID]
	if set == nil {
		return nil
	}
	if q := s.redeliver; q != nil {
		for _, m := range set.queue {
			if m == q {
				s.redeliver = nil
				return q
			}
		}
	}
	for _, q := range set.queue {
		if !q.acked && q.id > last {
			if s.duplicate {
				s.duplicate, s.redeliver = false, q
			}
			return q
		}
	}
	return nil
}

func (s *Server) deleteMessage(w http.ResponseWriter, r *http.Request) {
	id, ok := pathID(r, "mid")
	s.mu.Lock()
	defer s.mu.Unlock()
	ss := s.queueSessionLocked(r)
	if ss == nil {
		http.Error(w, "queue token expired or invalid", http.StatusUnauthorized)
		return
	}
	ss.lastActive = s.nowLocked()
	if set := s.sets[ss.setID]; set != nil && ok {
		for _, q := range set.queue {
			if q.id == id {
				q.acked = true
				w.WriteHeader(http.StatusNoContent)
				return
			}
		}
	}
	w.WriteHeader(http.StatusNotFound) // guess: an unknown message id
}

// acquireJobs assigns available jobs to the scale set (GHES flow). It is
// an Actions-service path, but takes the session's queue token.
func (s *Server) acquireJobs(w http.ResponseWriter, r *http.Request) {
	limitBody(w, r)
	var ids []int64
	if err := json.NewDecoder(r.Body).Decode(&ids); err != nil {
		writeException(w, http.StatusBadRequest, "ArgumentException", "want a JSON array of runner request ids")
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	ss := s.queueSessionLocked(r)
	if ss == nil {
		http.Error(w, "queue token expired or invalid", http.StatusUnauthorized)
		return
	}
	set := s.scaleSetLocked(w, r)
	if set == nil {
		return
	}
	acquired := []int64{}
	for _, id := range ids {
		if j := s.jobs[id]; j != nil && j.setID == set.id && j.state == jobAvailable {
			j.state, j.assigned = jobAssigned, s.nowLocked()
			acquired = append(acquired, id)
			s.enqueueLocked(set, s.eventLocked(j, "JobAssigned", nil))
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"count": len(acquired), "value": acquired})
}
