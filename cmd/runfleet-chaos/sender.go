package main

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/runfleet/runfleet/internal/github/githubtest"
)

// sendTimeout bounds one delivery attempt, as github.com bounds its own.
const sendTimeout = 10 * time.Second

// delivery is one workflow_job webhook. GitHub signs the same body and
// keeps the same X-GitHub-Delivery on every redelivery.
type delivery struct {
	id     string
	job    int64
	action string
	body   []byte
	// redelivery marks the extra, manual redelivery of an answered one.
	redelivery bool
	attempts   int
}

// sendStats are the senders' counts.
type sendStats struct {
	deliveries, redeliveries int
	attempts, refused        int // refused: no 2xx (connection refused, timeout, non-2xx)
	answered                 map[int]int
	outstanding              int
	// abandoned are the deliveries given up after a failed attempt during
	// the outage or on a replica killed meanwhile, as GitHub gives up on
	// every delivery; by action.
	abandoned map[string]int
	// delivered counts the attempts answered 2xx, by replica name.
	delivered map[string]int
}

// senders post deliveries with concurrent workers, retrying each with
// backoff until it is answered 2xx — whether runfleet is down (connection
// refused), slow (timeout) or answers an error — except during the outage,
// when they play GitHub exactly: a failed delivery is never sent again.
// With replicas each attempt goes to a replica that is up, and one that
// fails because its replica was killed meanwhile is not sent again either.
// Every attempt goes through the fake GitHub (githubtest's Deliver), which
// logs it in the App's webhook delivery log as GitHub would.
type senders struct {
	gh      *githubtest.Server
	route   router
	secret  []byte
	client  *http.Client
	dupRate float64
	queue   chan *delivery

	mu     sync.Mutex
	rng    *rand.Rand
	stats  sendStats
	outage bool
	wg     sync.WaitGroup
}

func newSenders(gh *githubtest.Server, route router, secret []byte, capacity int, dupRate float64, seed uint64) *senders {
	return &senders{
		gh:      gh,
		route:   route,
		secret:  secret,
		client:  &http.Client{Timeout: sendTimeout},
		dupRate: dupRate,
		// Every delivery is in the queue at most once at a time, so this
		// never fills: a retry's timer never blocks.
		queue: make(chan *delivery, capacity),
		rng:   rand.New(rand.NewPCG(seed, 0x5e4d)),
		stats: sendStats{answered: map[int]int{}, abandoned: map[string]int{}, delivered: map[string]int{}},
	}
}

// setOutage turns the outage on or off: while it is on, a failed attempt
// is not retried.
func (s *senders) setOutage(on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.outage = on
}

func (s *senders) start(ctx context.Context, workers int) {
	for range workers {
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			for {
				select {
				case <-ctx.Done():
					return
				case d := <-s.queue:
					s.attempt(ctx, d)
				}
			}
		}()
	}
}

func (s *senders) wait() { s.wg.Wait() }

// enqueue sends d until it is answered 2xx.
func (s *senders) enqueue(d *delivery) {
	s.mu.Lock()
	s.stats.outstanding++
	if d.redelivery {
		s.stats.redeliveries++
	} else {
		s.stats.deliveries++
	}
	s.mu.Unlock()
	s.queue <- d
}

func (s *senders) attempt(ctx context.Context, d *delivery) {
	s.mu.Lock()
	resend := d.redelivery || d.attempts > 0
	to, ok := s.route.pick(s.rng)
	s.mu.Unlock()
	if !ok {
		// No replica up for a moment (never so by plan): as a load
		// balancer with no healthy target, nothing is sent; try again.
		time.AfterFunc(100*time.Millisecond, func() { s.queue <- d })
		return
	}
	logged, err := s.post(ctx, d, resend, to.url)
	if err != nil {
		if ctx.Err() == nil {
			// Only a request that cannot be built fails here: keep it
			// outstanding, so the run reports it.
			fmt.Fprintf(os.Stderr, "runfleet-chaos: %v\n", err)
		}
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	d.attempts++
	s.stats.attempts++
	if logged.Answered() {
		s.stats.answered[logged.StatusCode]++
	}
	if !logged.Delivered() {
		s.stats.refused++
		if ctx.Err() != nil {
			return
		}
		if s.outage || s.route.killed(to) {
			// GitHub never redelivers by itself: the delivery stays failed
			// in the log, for runfleet to recover.
			s.stats.outstanding--
			s.stats.abandoned[d.action]++
			return
		}
		// 100ms doubling to 2s, jittered: while runfleet is down every
		// sender keeps knocking, as someone redelivering by hand would.
		backoff := min(100*time.Millisecond<<min(d.attempts-1, 5), 2*time.Second)
		backoff = backoff/2 + time.Duration(s.rng.Int64N(int64(backoff)))
		time.AfterFunc(backoff, func() { s.queue <- d })
		return
	}
	s.stats.outstanding--
	s.stats.delivered[s.route.replicaName(to.replica)]++
	if !d.redelivery && s.rng.Float64() < s.dupRate {
		again := &delivery{id: d.id, job: d.job, action: d.action, body: d.body, redelivery: true}
		s.stats.outstanding++
		s.stats.redeliveries++
		later := time.Duration(s.rng.Int64N(int64(5 * time.Second)))
		time.AfterFunc(later, func() { s.queue <- again })
	}
}

// post makes one attempt through the fake GitHub, which logs it; resend
// (every attempt after a delivery's first) is a redelivery there.
func (s *senders) post(ctx context.Context, d *delivery, resend bool, url string) (githubtest.Delivery, error) {
	req, err := githubtest.WebhookRequest(url, s.secret, "workflow_job", d.id, d.body)
	if err != nil {
		return githubtest.Delivery{}, err
	}
	req.Header.Set("X-GitHub-Hook-Installation-Target-Type", "integration")
	return s.gh.Deliver(s.client, req.WithContext(ctx), resend)
}

func (s *senders) snapshot() sendStats {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := s.stats
	out.answered = maps.Clone(s.stats.answered)
	out.abandoned = maps.Clone(s.stats.abandoned)
	out.delivered = maps.Clone(s.stats.delivered)
	return out
}
