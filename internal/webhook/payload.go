package webhook

import (
	"fmt"
	"mime"
	"net/http"
	"net/url"
	"strings"
)

const (
	mediaJSON = "application/json"
	// GitHub offers this as a webhook's alternative content type: the JSON
	// payload then travels URL-encoded in a form field named "payload".
	mediaForm = "application/x-www-form-urlencoded"
)

// decodePayload returns the JSON payload carried by body. Both content types
// GitHub can be configured to send are accepted, so a webhook set up with the
// form type works instead of failing every delivery. A missing Content-Type
// is read as JSON: GitHub always sends one, and the body is already
// authenticated by its signature, so refusing would protect nothing.
// Parameters such as "; charset=utf-8" are allowed.
func decodePayload(contentType string, body []byte) ([]byte, *rejection) {
	if strings.TrimSpace(contentType) == "" {
		return body, nil
	}
	media, _, err := mime.ParseMediaType(contentType)
	if err != nil {
		return nil, reject(http.StatusUnsupportedMediaType, fmt.Sprintf("Content-Type %q cannot be parsed: %v", contentType, err))
	}
	switch media {
	case mediaJSON:
		return body, nil
	case mediaForm:
		form, err := url.ParseQuery(string(body))
		if err != nil {
			return nil, reject(http.StatusBadRequest, fmt.Sprintf("form-encoded body cannot be decoded: %v", err))
		}
		if !form.Has("payload") {
			return nil, reject(http.StatusBadRequest, "form-encoded body has no \"payload\" field; send the JSON payload with Content-Type: application/json")
		}
		return []byte(form.Get("payload")), nil
	default:
		return nil, reject(http.StatusUnsupportedMediaType, fmt.Sprintf("Content-Type %q is not supported; use application/json (or GitHub's application/x-www-form-urlencoded)", media))
	}
}
