package main

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
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
}

// senders post deliveries with concurrent workers, retrying each with
// backoff until it is answered 2xx — whether runfleet is down (connection
// refused), slow (timeout) or answers an error.
type senders struct {
	url     string
	secret  []byte
	client  *http.Client
	dupRate float64
	queue   chan *delivery

	mu    sync.Mutex
	rng   *rand.Rand
	stats sendStats
	wg    sync.WaitGroup
}

func newSenders(url string, secret []byte, capacity int, dupRate float64, seed uint64) *senders {
	return &senders{
		url:     url,
		secret:  secret,
		client:  &http.Client{Timeout: sendTimeout},
		dupRate: dupRate,
		// Every delivery is in the queue at most once at a time, so this
		// never fills: a retry's timer never blocks.
		queue: make(chan *delivery, capacity),
		rng:   rand.New(rand.NewPCG(seed, 0x5e4d)),
		stats: sendStats{answered: map[int]int{}},
	}
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
	status, err := s.post(ctx, d)
	s.mu.Lock()
	defer s.mu.Unlock()
	d.attempts++
	s.stats.attempts++
	if status != 0 {
		s.stats.answered[status]++
	}
	if err != nil || status/100 != 2 {
		s.stats.refused++
		if ctx.Err() != nil {
			return
		}
		// 100ms doubling to 2s, jittered: while runfleet is down every
		// sender keeps knocking, as a redelivering GitHub would.
		backoff := min(100*time.Millisecond<<min(d.attempts-1, 5), 2*time.Second)
		backoff = backoff/2 + time.Duration(s.rng.Int64N(int64(backoff)))
		time.AfterFunc(backoff, func() { s.queue <- d })
		return
	}
	s.stats.outstanding--
	if !d.redelivery && s.rng.Float64() < s.dupRate {
		again := &delivery{id: d.id, job: d.job, action: d.action, body: d.body, redelivery: true}
		s.stats.outstanding++
		s.stats.redeliveries++
		later := time.Duration(s.rng.Int64N(int64(5 * time.Second)))
		time.AfterFunc(later, func() { s.queue <- again })
	}
}

func (s *senders) post(ctx context.Context, d *delivery) (int, error) {
	req, err := githubtest.WebhookRequest(s.url, s.secret, "workflow_job", d.id, d.body)
	if err != nil {
		return 0, err
	}
	req.Header.Set("X-GitHub-Hook-Installation-Target-Type", "organization")
	resp, err := s.client.Do(req.WithContext(ctx))
	if err != nil {
		return 0, fmt.Errorf("delivery %s: %w", d.id, err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	return resp.StatusCode, nil
}

func (s *senders) snapshot() sendStats {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := s.stats
	out.answered = map[int]int{}
	for k, v := range s.stats.answered {
		out.answered[k] = v
	}
	return out
}
