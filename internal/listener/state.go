package listener

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/runfleet/runfleet/internal/store"
)

// state is what a listener keeps in the store between its lives, in the
// cursor named cursorName(pool): the scale set it listens to, its message
// session, and the last message it acknowledged. A listener started after
// a crash resumes the stored session (or, when GitHub dropped it, opens a
// new one and keeps lastMessageId), so it neither waits out its own stale
// session nor skips a message.
type state struct {
	ScaleSetID    int64  `json:"scale_set_id,omitempty"`
	SessionID     string `json:"session_id,omitempty"`
	LastMessageID int64  `json:"last_message_id,omitempty"`
}

// cursorName is the store cursor holding a pool's listener state.
func cursorName(pool string) string { return "scaleset/" + pool }

// stateStore reads and writes one pool's state with the cursor's
// compare-and-set: the lease makes one listener write it, the version
// makes a second one (a lease lost mid-write) fail instead of overwrite.
type stateStore struct {
	cursors store.Cursors
	name    string
	version int64
}

// load reads the stored state; a cursor never written is the zero state.
func (s *stateStore) load(ctx context.Context) (state, error) {
	c, err := s.cursors.GetCursor(ctx, s.name)
	if err != nil {
		return state{}, fmt.Errorf("read listener state %s: %w", s.name, err)
	}
	s.version = c.Version
	var st state
	if c.Value == "" {
		return st, nil
	}
	if err := json.Unmarshal([]byte(c.Value), &st); err != nil {
		// The version is read, so the next save replaces the bad value.
		return state{}, fmt.Errorf("%w %s: %v", errUnreadableState, s.name, err)
	}
	return st, nil
}

// errUnreadableState: the stored state does not decode. It costs a new
// session and a replay of the queue from its start, which the ledger
// absorbs; it must not stop the listener.
var errUnreadableState = errors.New("listener state unreadable")

// save writes st if nobody wrote the cursor since this listener last read
// or wrote it; a *store.ConflictError means another listener holds it.
func (s *stateStore) save(ctx context.Context, st state) error {
	b, err := json.Marshal(st)
	if err != nil {
		return err
	}
	c := &store.Cursor{Name: s.name, Value: string(b), Version: s.version}
	if err := s.cursors.PutCursor(ctx, c); err != nil {
		return fmt.Errorf("write listener state %s: %w", s.name, err)
	}
	s.version = c.Version
	return nil
}
