package sim

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
)

// traceLogger writes the controller's log lines into the trace
// (Config.LogToTrace), so a replayed seed shows what the engine decided
// between its calls.
func traceLogger(w *world) *slog.Logger {
	return slog.New(&traceHandler{w: w})
}

type traceHandler struct {
	w     *world
	attrs string
}

func (h *traceHandler) Enabled(context.Context, slog.Level) bool { return true }

func (h *traceHandler) Handle(_ context.Context, r slog.Record) error {
	var b strings.Builder
	fmt.Fprintf(&b, "log %s %s%s", r.Level, r.Message, h.attrs)
	r.Attrs(func(a slog.Attr) bool {
		fmt.Fprintf(&b, " %s=%v", a.Key, a.Value)
		return true
	})
	h.w.tr.add("%s", b.String())
	return nil
}

func (h *traceHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	var b strings.Builder
	b.WriteString(h.attrs)
	for _, a := range attrs {
		fmt.Fprintf(&b, " %s=%v", a.Key, a.Value)
	}
	return &traceHandler{w: h.w, attrs: b.String()}
}

func (h *traceHandler) WithGroup(string) slog.Handler { return h }
