package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/runfleet/runfleet/internal/store"
)

var deliveryTests = []contractTest{
	{"Delivery/MarkedOnce", deliveryMarkedOnce},
	{"Delivery/ExpiresAfterTTL", deliveryExpiresAfterTTL},
	{"Delivery/ForgetAllowsAgain", deliveryForgetAllowsAgain},
	{"Delivery/ConcurrentMarkOneWinner", deliveryConcurrentMarkOneWinner},
}

func mustMark(t *testing.T, s store.Store, id string, ttl time.Duration) bool {
	t.Helper()
	fresh, err := s.MarkDelivery(context.Background(), id, ttl)
	if err != nil {
		t.Fatalf("MarkDelivery(%s): %v", id, err)
	}
	return fresh
}

func deliveryMarkedOnce(t *testing.T, s store.Store) {
	const id = "72d3162e-cc78-11e3-81ab-4c9367dc0958"
	if !mustMark(t, s, id, store.DeliveryRetention) {
		t.Fatal("first MarkDelivery = false, want true")
	}
	if mustMark(t, s, id, store.DeliveryRetention) {
		t.Fatal("second MarkDelivery = true, want false")
	}
	if !mustMark(t, s, id+"-other", store.DeliveryRetention) {
		t.Fatal("MarkDelivery of another id = false, want true")
	}
}

// The store must judge expiry itself: DynamoDB's TTL (and DynamoDB Local's,
// which never deletes) removes items late, if at all.
func deliveryExpiresAfterTTL(t *testing.T, s store.Store) {
	const (
		id   = "ttl-delivery"
		ttl  = time.Second
		poll = 100 * time.Millisecond
		// A store may keep its expiry at millisecond precision.
		precision = 10 * time.Millisecond
	)
	marked := time.Now()
	if !mustMark(t, s, id, ttl) {
		t.Fatal("first MarkDelivery = false, want true")
	}
	if mustMark(t, s, id, ttl) {
		t.Fatal("MarkDelivery within ttl = true, want false")
	}
	deadline := marked.Add(ttl + 3*time.Second)
	for {
		time.Sleep(poll)
		if mustMark(t, s, id, ttl) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("delivery still marked %v after its %v ttl", time.Since(marked), ttl)
		}
	}
	if early := time.Since(marked); early < ttl-precision {
		t.Fatalf("delivery expired after %v, before its %v ttl", early, ttl)
	}
	// Marking it again after expiry records it afresh.
	if mustMark(t, s, id, ttl) {
		t.Fatal("MarkDelivery right after re-marking = true, want false")
	}
}

func deliveryForgetAllowsAgain(t *testing.T, s store.Store) {
	ctx := context.Background()
	const id = "forget-me"
	if !mustMark(t, s, id, store.DeliveryRetention) {
		t.Fatal("first MarkDelivery = false")
	}
	if err := s.ForgetDelivery(ctx, id); err != nil {
		t.Fatalf("ForgetDelivery: %v", err)
	}
	if !mustMark(t, s, id, store.DeliveryRetention) {
		t.Fatal("MarkDelivery after ForgetDelivery = false, want true")
	}
	if mustMark(t, s, id, store.DeliveryRetention) {
		t.Fatal("MarkDelivery after re-marking = true, want false")
	}
	if err := s.ForgetDelivery(ctx, "never-marked"); err != nil {
		t.Fatalf("ForgetDelivery of an unknown id: %v (want nil: forgetting is idempotent)", err)
	}
}

func deliveryConcurrentMarkOneWinner(t *testing.T, s store.Store) {
	ctx := context.Background()
	fresh := make([]bool, racers)
	errs := make([]error, racers)
	startTogether(racers, func(int) {}, func(i int) {
		fresh[i], errs[i] = s.MarkDelivery(ctx, "contended", store.DeliveryRetention)
	})
	wins := 0
	for i := range fresh {
		if errs[i] != nil {
			t.Fatalf("MarkDelivery: %v", errs[i])
		}
		if fresh[i] {
			wins++
		}
	}
	if wins != 1 {
		t.Fatalf("%d concurrent MarkDelivery calls returned true, want 1", wins)
	}
}
