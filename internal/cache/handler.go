package cache

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/runfleet/runfleet/internal/metadata"
)

// The paths the handler serves; mount it on both. The client joins
// "/twirp/<service>/<method>" to ACTIONS_RESULTS_URL as an absolute path,
// so the twirp prefix must sit at the root of the listener, whatever path
// ACTIONS_RESULTS_URL names.
const (
	TwirpPrefix = "/twirp/github.actions.results.api.v1.CacheService/"
	BlobPrefix  = "/_cache/blobs/"
)

// Prefixes the client recognises in a refusal's message (npm @actions/cache
// CACHE_READ_DENIED_PREFIX, CACHE_WRITE_DENIED_PREFIX): it then warns and
// goes on as on a miss instead of retrying.
const (
	readDeniedPrefix  = "cache read denied:"
	writeDeniedPrefix = "cache write denied:"
)

// Size limits: a twirp call's JSON is a few hundred bytes; a block list of
// the SDK's 50,000 blocks at most is a few MB.
const (
	maxCallBody      = 64 << 10
	maxBlockListBody = 8 << 20
	// DefaultMaxEntryBytes is GitHub's per-repository cap, which no one
	// archive may exceed either.
	DefaultMaxEntryBytes = 10 << 30
	// DefaultURLTTL is how long a signed blob URL works: long enough for
	// a slow 10 GB upload, short enough that a leaked URL soon dies.
	DefaultURLTTL = 2 * time.Hour
)

// Metrics counts what the cache serves; read it with Snapshot.
type Metrics struct {
	hits, misses, bytesUp, bytesDown atomic.Int64
}

// MetricsSnapshot is the counters at one instant.
type MetricsSnapshot struct {
	Hits, Misses, BytesUploaded, BytesDownloaded int64
}

// Snapshot reads the counters.
func (m *Metrics) Snapshot() MetricsSnapshot {
	return MetricsSnapshot{m.hits.Load(), m.misses.Load(), m.bytesUp.Load(), m.bytesDown.Load()}
}

// Options configure the Handler.
type Options struct {
	Store  Store
	Tokens *Tokens
	// BlobKey signs blob URLs (at least 32 bytes).
	BlobKey []byte
	// PublicURL is the base the runner reaches this handler at; blob URLs
	// are made under it.
	PublicURL     string
	URLTTL        time.Duration
	MaxEntryBytes int64
	Now           func() time.Time
	Log           *slog.Logger
	Metrics       *Metrics
}

// Handler serves the cache service v2 twirp calls and the blob URLs.
type Handler struct {
	o Options
}

// NewHandler checks o and returns the handler.
func NewHandler(o Options) (*Handler, error) {
	switch {
	case o.Store == nil || o.Tokens == nil:
		return nil, errors.New("cache: handler needs a store and tokens")
	case len(o.BlobKey) < 32:
		return nil, errors.New("cache: blob URL key must be at least 32 bytes")
	}
	u, err := url.Parse(o.PublicURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("cache: public URL %q is not an http(s) URL", o.PublicURL)
	}
	o.PublicURL = strings.TrimRight(o.PublicURL, "/")
	if o.URLTTL <= 0 {
		o.URLTTL = DefaultURLTTL
	}
	if o.MaxEntryBytes <= 0 {
		o.MaxEntryBytes = DefaultMaxEntryBytes
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	if o.Metrics == nil {
		o.Metrics = &Metrics{}
	}
	return &Handler{o: o}, nil
}

// ServeHTTP implements http.Handler.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case strings.HasPrefix(r.URL.Path, TwirpPrefix):
		h.serveTwirp(w, r, strings.TrimPrefix(r.URL.Path, TwirpPrefix))
	case strings.HasPrefix(r.URL.Path, BlobPrefix):
		h.serveBlob(w, r, strings.TrimPrefix(r.URL.Path, BlobPrefix))
	default:
		http.NotFound(w, r)
	}
}

// twirpError is a refusal in twirp's JSON error shape.
type twirpError struct {
	status int
	code   string
	msg    string
}

func (h *Handler) refuseTwirp(w http.ResponseWriter, log *slog.Logger, e twirpError) {
	log.Warn("cache: call refused", "status", e.status, "code", e.code, "reason", e.msg)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(e.status)
	_ = json.NewEncoder(w).Encode(map[string]string{"code": e.code, "msg": e.msg})
}

func writeTwirp(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

// int64String is a protobuf int64 in JSON: a string, or a number from a
// client that writes one.
type int64String int64

func (n *int64String) UnmarshalJSON(b []byte) error {
	s := strings.Trim(string(b), `"`)
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return fmt.Errorf("not an int64: %s", b)
	}
	*n = int64String(v)
	return nil
}

// The twirp messages in their JSON form with proto field names, as the
// client's generated code writes them (useProtoFieldName: true).
type (
	createRequest struct {
		Key     string `json:"key"`
		Version string `json:"version"`
	}
	createResponse struct {
		OK              bool   `json:"ok"`
		SignedUploadURL string `json:"signed_upload_url,omitempty"`
		Message         string `json:"message,omitempty"`
	}
	finalizeRequest struct {
		Key       string      `json:"key"`
		Version   string      `json:"version"`
		SizeBytes int64String `json:"size_bytes"`
	}
	finalizeResponse struct {
		OK      bool   `json:"ok"`
		EntryID string `json:"entry_id,omitempty"`
		Message string `json:"message,omitempty"`
	}
	lookupRequest struct {
		Key         string   `json:"key"`
		RestoreKeys []string `json:"restore_keys"`
		Version     string   `json:"version"`
	}
	lookupResponse struct {
		OK                bool   `json:"ok"`
		SignedDownloadURL string `json:"signed_download_url,omitempty"`
		MatchedKey        string `json:"matched_key,omitempty"`
	}
)

func bearer(r *http.Request) string {
	a := r.Header.Get("Authorization")
	if len(a) > 7 && strings.EqualFold(a[:7], "Bearer ") {
		return strings.TrimSpace(a[7:])
	}
	return ""
}

func (h *Handler) serveTwirp(w http.ResponseWriter, r *http.Request, method string) {
	log := h.o.Log.With("method", method)
	if r.Method != http.MethodPost {
		h.refuseTwirp(w, log, twirpError{http.StatusNotFound, "bad_route", "twirp calls are POSTs"})
		return
	}
	if ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); ct != "application/json" {
		h.refuseTwirp(w, log, twirpError{http.StatusNotFound, "bad_route", "only application/json is served"})
		return
	}
	claim, err := h.o.Tokens.Verify(bearer(r))
	if err != nil {
		var te *metadata.TokenError
		reason := "token refused"
		if errors.As(err, &te) {
			reason = "token refused: " + te.Reason
		}
		h.refuseTwirp(w, log, twirpError{http.StatusUnauthorized, "unauthenticated", reason})
		return
	}
	log = log.With("instance", claim.Instance, "repo", claim.Repo)
	body := http.MaxBytesReader(w, r.Body, maxCallBody)
	var call func(context.Context, Claim, *json.Decoder) (any, *twirpError)
	switch method {
	case "CreateCacheEntry":
		call = h.create
	case "FinalizeCacheEntryUpload":
		call = h.finalize
	case "GetCacheEntryDownloadURL":
		call = h.lookup
	default:
		h.refuseTwirp(w, log, twirpError{http.StatusNotFound, "bad_route", "no method " + method})
		return
	}
	resp, terr := call(r.Context(), claim, json.NewDecoder(body))
	if terr != nil {
		h.refuseTwirp(w, log, *terr)
		return
	}
	writeTwirp(w, resp)
}

func badJSON(err error) *twirpError {
	return &twirpError{http.StatusBadRequest, "malformed", "request body: " + err.Error()}
}

// storeError turns a store's error into the twirp refusal a client acts on.
func storeError(err error) *twirpError {
	var ie *InvalidError
	switch {
	case errors.As(err, &ie):
		return &twirpError{http.StatusBadRequest, "invalid_argument", ie.Error()}
	case errors.Is(err, ErrExists):
		// GitHub's answer to a second save of a key: the client reports
		// "another job may be creating this cache" and the step passes.
		return &twirpError{http.StatusConflict, "already_exists", "cache entry with the same key, version, and scope already exists"}
	case errors.Is(err, ErrNotFound):
		return &twirpError{http.StatusNotFound, "not_found", "no pending cache entry with that key and version in this scope"}
	case errors.Is(err, ErrNotPending):
		return &twirpError{http.StatusConflict, "already_exists", "cache entry is already finalized"}
	}
	return &twirpError{http.StatusInternalServerError, "internal", "cache store failed"}
}

func (h *Handler) create(ctx context.Context, c Claim, dec *json.Decoder) (any, *twirpError) {
	var req createRequest
	if err := dec.Decode(&req); err != nil {
		return nil, badJSON(err)
	}
	if c.Write == "" {
		return nil, &twirpError{http.StatusForbidden, "permission_denied", writeDeniedPrefix + " this job's token may not write the cache (a pull request's job on the default branch's ref)"}
	}
	if err := ValidateKey("key", req.Key); err != nil {
		return nil, storeError(err)
	}
	if err := ValidateVersion(req.Version); err != nil {
		return nil, storeError(err)
	}
	e, err := h.o.Store.Reserve(ctx, Ref{RepoID: c.RepoID, Scope: c.Write, Key: req.Key, Version: req.Version})
	if err != nil {
		terr := storeError(err)
		if terr.status >= 500 {
			h.o.Log.Error("cache: reserve failed", "err", err, "repo", c.Repo)
		}
		return nil, terr
	}
	h.o.Log.Info("cache: entry reserved", "id", e.ID, "repo", c.Repo, "scope", c.Write, "key", req.Key)
	up := h.signedURL("u", e.ID, c.RepoID)
	if _, ok := h.o.Store.(PartUploader); ok {
		// A hint, outside the signature, for the machine's cache agent:
		// the bytes may go straight to the bucket (blobdirect.go).
		up += "&" + DirectHint
	}
	return createResponse{OK: true, SignedUploadURL: up}, nil
}

func (h *Handler) finalize(ctx context.Context, c Claim, dec *json.Decoder) (any, *twirpError) {
	var req finalizeRequest
	if err := dec.Decode(&req); err != nil {
		return nil, badJSON(err)
	}
	if c.Write == "" {
		return nil, &twirpError{http.StatusForbidden, "permission_denied", writeDeniedPrefix + " this job's token may not write the cache"}
	}
	if req.SizeBytes < 0 || int64(req.SizeBytes) > h.o.MaxEntryBytes {
		return nil, &twirpError{http.StatusBadRequest, "invalid_argument", fmt.Sprintf("size_bytes %d is negative or over the %d-byte limit", req.SizeBytes, h.o.MaxEntryBytes)}
	}
	e, err := h.o.Store.Finalize(ctx, Ref{RepoID: c.RepoID, Scope: c.Write, Key: req.Key, Version: req.Version}, int64(req.SizeBytes))
	if err != nil {
		terr := storeError(err)
		if terr.status >= 500 {
			h.o.Log.Error("cache: finalize failed", "err", err, "repo", c.Repo)
		}
		return nil, terr
	}
	h.o.Log.Info("cache: entry saved", "id", e.ID, "repo", c.Repo, "scope", c.Write, "key", req.Key, "bytes", e.Size)
	return finalizeResponse{OK: true, EntryID: strconv.FormatInt(e.ID, 10)}, nil
}

func (h *Handler) lookup(ctx context.Context, c Claim, dec *json.Decoder) (any, *twirpError) {
	var req lookupRequest
	if err := dec.Decode(&req); err != nil {
		return nil, badJSON(err)
	}
	if err := ValidateLookup(req.Key, req.RestoreKeys, req.Version); err != nil {
		return nil, storeError(err)
	}
	keys := append([]string{req.Key}, req.RestoreKeys...)
	e, ok, err := h.o.Store.Lookup(ctx, c.RepoID, c.Read, keys, req.Version)
	if err != nil {
		h.o.Log.Error("cache: lookup failed", "err", err, "repo", c.Repo)
		return nil, storeError(err)
	}
	if !ok {
		h.o.Metrics.misses.Add(1)
		return lookupResponse{OK: false}, nil
	}
	h.o.Metrics.hits.Add(1)
	download := h.signedURL("d", e.ID, c.RepoID)
	if direct, ok := h.o.Store.(DownloadURLer); ok {
		// The storage serves the bytes itself (S3): runfleet only signs.
		u, err := direct.DownloadURL(ctx, e.ID, h.o.URLTTL)
		switch {
		case errors.Is(err, ErrInParts):
			// A hint, outside the signature, for the machine's cache
			// agent: it fetches the parts itself (blobdirect.go).
			download += "&" + PartsHint
		case err != nil:
			h.o.Log.Error("cache: presigning a download failed", "err", err, "repo", c.Repo)
			return nil, storeError(err)
		default:
			download = u
		}
	}
	return lookupResponse{OK: true, SignedDownloadURL: download, MatchedKey: e.Key}, nil
}
