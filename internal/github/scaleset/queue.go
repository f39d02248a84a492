package scaleset

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// MaxCapacityHeader tells the service how many runners the scale set can
// still have, so that it assigns no more jobs than that.
const MaxCapacityHeader = "X-ScaleSetMaxCapacity"

// GetMessage long-polls the session's queue for the next message after
// lastMessageID (0 replays from the first message still held). It returns
// nil, nil when the poll window passed with nothing (202). maxCapacity is
// the most runners the scale set may have (max_runners).
//
// A message stays in the queue until DeleteMessage; it is delivered again
// on a later poll until then, and GitHub may deliver one twice anyway.
func (m *MessageSession) GetMessage(ctx context.Context, lastMessageID int64, maxCapacity int) (*Message, error) {
	var w wireMessage
	status, err := m.queueCall(ctx, func(queueURL string) string {
		if lastMessageID <= 0 {
			return queueURL
		}
		return addQuery(queueURL, "lastMessageId", itoa(lastMessageID))
	}, call{
		op: "get message", res: resQueue, method: http.MethodGet,
		header: http.Header{
			"Accept":          {"application/json; api-version=" + apiVersion},
			MaxCapacityHeader: {strconv.Itoa(max(maxCapacity, 0))},
		},
		ok: []int{http.StatusOK, http.StatusAccepted}, out: &w, limit: maxMessageBytes, poll: true,
	})
	if err != nil || status == http.StatusAccepted {
		return nil, err
	}
	return w.message(), nil
}

// DeleteMessage acknowledges a message: the queue stops delivering it.
// Acknowledge only once the message's effects are durable.
func (m *MessageSession) DeleteMessage(ctx context.Context, messageID int64) error {
	_, err := m.queueCall(ctx, func(queueURL string) string {
		return appendPath(queueURL, itoa(messageID))
	}, call{
		op: "delete message " + itoa(messageID), res: resQueue, method: http.MethodDelete,
		ok: []int{http.StatusNoContent, http.StatusOK},
	})
	return err
}

// AcquireJobs asks for the JobAvailable messages' runner requests to be
// assigned to this scale set, and returns the ids GitHub assigned. GHES
// needs it; github.com sends JobAssigned without it. Acquire only what
// the scale set has room for.
func (m *MessageSession) AcquireJobs(ctx context.Context, runnerRequestIDs []int64) ([]int64, error) {
	if len(runnerRequestIDs) == 0 {
		return nil, nil
	}
	conn, err := m.c.connection(ctx)
	if err != nil {
		return nil, err
	}
	var acquired countedList[int64]
	_, err = m.queueCall(ctx, func(string) string {
		return withAPIVersion(conn.url + scaleSetsPath + "/" + itoa(m.scaleSetID) + "/acquirejobs")
	}, call{
		op: "acquire jobs", res: resQueue, method: http.MethodPost, body: runnerRequestIDs,
		ok: []int{http.StatusOK}, out: &acquired,
	})
	if err != nil {
		return nil, err
	}
	return acquired.Value, nil
}

// addQuery sets one query parameter on an absolute URL.
func addQuery(raw, key, value string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return raw // the call then fails with the URL's own error
	}
	q := u.Query()
	q.Set(key, value)
	u.RawQuery = q.Encode()
	return u.String()
}

// appendPath adds a path segment to an absolute URL, keeping its query.
func appendPath(raw, segment string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return raw
	}
	u.Path = strings.TrimSuffix(u.Path, "/") + "/" + url.PathEscape(segment)
	return u.String()
}
