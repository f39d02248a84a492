package webhook

import (
	"errors"
	"fmt"
	"io"
	"net/http"
)

// ServeHTTP serves the intake over net/http (embedded mode). The body is read
// through http.MaxBytesReader, so an oversized request costs at most
// MaxBodyBytes of memory and its connection is closed after the 413.
func (in *Intake) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	d := delivery{id: r.Header.Get(DeliveryHeader), event: r.Header.Get(EventHeader)}

	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		writeResponse(w, in.rejected(ctx, d, reject(http.StatusMethodNotAllowed, fmt.Sprintf("method %s is not allowed; webhooks are POSTed", r.Method))))
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, in.maxBody))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			writeResponse(w, in.rejected(ctx, d, tooLarge(in.maxBody)))
			return
		}
		writeResponse(w, in.rejected(ctx, d, reject(http.StatusBadRequest, fmt.Sprintf("body could not be read: %v", err))))
		return
	}
	writeResponse(w, in.Handle(ctx, Request{Headers: r.Header, Body: body}))
}

func writeResponse(w http.ResponseWriter, resp Response) {
	w.Header().Set("Content-Type", ContentType)
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(resp.StatusCode)
	_, _ = w.Write(resp.Body)
}
