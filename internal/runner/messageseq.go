package runner

// MessageSeq is where a scale-set job event stood in its scale set's
// message queue: the message's id and the event's index in that
// message's body. GitHub numbers a scale set's messages in the order it
// writes them (a listener resumes after lastMessageId), and an event's
// place in its message is the order GitHub wrote the message's events;
// so of two events about one job from one scale set, the one with the
// smaller MessageSeq happened first, however late the broker delivers it.
// The zero MessageSeq is "not known" (every webhook event).
type MessageSeq struct {
	ScaleSetID int64 `json:"scale_set_id"`
	MessageID  int64 `json:"message_id"`
	Index      int   `json:"index,omitempty"`
}

// IsZero reports whether s is unknown.
func (s MessageSeq) IsZero() bool { return s.MessageID == 0 }

// Before reports whether s is known to come before o: both known, from
// the same scale set's queue, and s earlier in it. Events of two scale
// sets (GitHub deleted one and runfleet made it anew, numbering its
// messages from 1 again) are not ordered by their ids.
func (s MessageSeq) Before(o MessageSeq) bool {
	if s.IsZero() || o.IsZero() || s.ScaleSetID != o.ScaleSetID {
		return false
	}
	return s.MessageID < o.MessageID || s.MessageID == o.MessageID && s.Index < o.Index
}
