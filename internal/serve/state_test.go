package serve

import (
	"errors"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"

	"github.com/runfleet/runfleet/internal/config"
)

// store.kind chooses the store and the queue, and with them what the rest
// of serve may assume: bolt is one file, one owner, purged by serve.
func TestOpenStateFollowsStoreKind(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	cfg := &config.Config{Store: config.Store{Kind: config.StoreBolt, Dir: dir},
		Engine: config.Engine{MaxReceives: 3, VisibilityTimeout: config.DefaultVisibilityTimeout}}
	log := slog.New(slog.DiscardHandler)

	st, err := openState(cfg, log)
	if err != nil {
		t.Fatal(err)
	}
	if !st.soleOwner || st.purger == nil || st.store == nil || st.queue == nil || st.deadLetters == nil {
		t.Errorf("bolt state %+v: want the sole owner's store, its queue and its purger", st)
	}
	if want := "bolt:" + filepath.Join(dir, StateFile); st.where != want {
		t.Errorf("where = %q, want %q", st.where, want)
	}
	if _, err := openState(cfg, log); err == nil || !strings.Contains(err.Error(), "another runfleet") {
		t.Errorf("a second open of the same store.dir = %v, want a refusal naming the cause", err)
	}
	if err := st.close(); err != nil {
		t.Fatal(err)
	}

	cfg.Store.Kind = "sqlite"
	_, err = openState(cfg, log)
	var fe *config.FieldError
	if !errors.As(err, &fe) || fe.Field != "store.kind" || !strings.Contains(fe.Problem, "one of bolt, postgres") {
		t.Errorf("unknown kind: %v, want a store.kind error naming the kinds", err)
	}
}
