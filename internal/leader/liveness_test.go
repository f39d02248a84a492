package leader

import (
	"context"
	"testing"
	"testing/synctest"
	"time"
)

// A replica's liveness: its life's holder id names its claims; when the
// lease cannot be renewed the life ends before the lease expires (the
// others take its claims over only then), and the next life holds a new
// lease under a new holder id, so the ended life's claims never pass for
// live again. A stop releases the lease.
func TestLivenessEndsALifeBeforeItsLeaseExpiresAndBeginsAnother(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		shared := memLeases()
		cut := &severable{Leases: shared}
		l, err := NewLiveness(Options{Leases: cut, Holder: "host-7-ab", TTL: 15 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		ctx, stop := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { defer close(done); l.Run(ctx) }()
		synctest.Wait()
		holder, alive, ok := l.Current()
		if !ok || holder != "host-7-ab" {
			t.Fatalf("first life: %q %v", holder, ok)
		}
		held, _ := shared.GetLease(context.Background(), LivenessLease(holder))
		if !held.HeldBy(holder, time.Now()) {
			t.Fatalf("lease %+v not held by %s", held, holder)
		}
		cut.cut.Store(true)
		<-alive.Done()
		if endedAt := time.Now(); !endedAt.Before(held.ExpiresAt) {
			t.Errorf("life ended at %v, want before its lease's expiry %v", endedAt, held.ExpiresAt)
		}
		synctest.Wait()
		if h, _, ok := l.Current(); ok && h == holder {
			t.Fatalf("the ended life %s is still current", h)
		}
		cut.cut.Store(false)
		time.Sleep(time.Minute)
		synctest.Wait()
		next, nextAlive, ok := l.Current()
		if !ok || next != "host-7-ab~2" || nextAlive.Err() != nil {
			t.Fatalf("second life: %q %v", next, ok)
		}
		if old, _ := shared.GetLease(context.Background(), LivenessLease(holder)); old.HeldBy(holder, time.Now()) {
			t.Errorf("the first life's lease is held again: %+v", old)
		}
		stop()
		<-done
		if after, _ := shared.GetLease(context.Background(), LivenessLease(next)); !after.Free(time.Now()) || after.Version == 0 {
			t.Errorf("after the stop the lease is %+v, want released", after)
		}
		if nextAlive.Err() == nil {
			t.Errorf("the life outlived the stop")
		}
	})
}

func TestLivenessRefusesAHolderThatAClaimCannotCarry(t *testing.T) {
	if _, err := NewLiveness(Options{Leases: memLeases(), Holder: "a@b", TTL: time.Second}); err == nil {
		t.Error("holder with '@' accepted")
	}
}
