package serve

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	"github.com/runfleet/runfleet/internal/config"
	"github.com/runfleet/runfleet/internal/engine"
	"github.com/runfleet/runfleet/internal/metadata"
)

// TokenKeyFile is where `runfleet serve` keeps the instance token key it
// generated, under store.dir, when the config names none.
const TokenKeyFile = "instance-token.key"

// bootstrap is embedded mode's runner bootstrap: on when server.public_url
// is set, so machines know where to call.
type bootstrap struct {
	tokens      *metadata.Tokens
	metadataURL string
	callbackURL string
	// cache is the actions/cache service, nil unless cache.dir is set.
	cache *cacheService
}

// newBootstrap returns nil when server.public_url is unset. The key is the
// configured one, else one generated on first start and kept in store.dir:
// a key that changed at every restart would strand machines that are
// booting across it.
func newBootstrap(cfg *config.Config, log *slog.Logger) (*bootstrap, error) {
	if cfg.Server.PublicURL == "" {
		return nil, nil
	}
	key := cfg.Server.InstanceTokenKey
	if len(key) == 0 {
		var err error
		if key, err = loadOrCreateKey(filepath.Join(cfg.Store.Dir, TokenKeyFile), log); err != nil {
			return nil, err
		}
	}
	tokens, err := metadata.NewTokens(key, cfg.ControllerID, nil)
	if err != nil {
		return nil, fmt.Errorf("serve: %w", err)
	}
	b := &bootstrap{tokens: tokens}
	b.metadataURL, b.callbackURL = metadata.BaseURLs(cfg.Server.PublicURL)
	if b.cache, err = newCacheService(cfg, key, log); err != nil {
		return nil, err
	}
	return b, nil
}

// engineOptions turns bootstrap on in the engine (o is returned unchanged
// when b is nil).
func (b *bootstrap) engineOptions(o engine.Options) engine.Options {
	if b == nil {
		return o
	}
	o.MetadataURL, o.CallbackURL, o.InstanceToken = b.metadataURL, b.callbackURL, b.tokens.Mint
	return o
}

// mount serves the metadata and callback routes beside the other routes.
// With bootstrap off they answer 404 saying how to turn it on.
func (b *bootstrap) mount(cfg *config.Config, eng *engine.Engine, rest http.Handler, log *slog.Logger) (http.Handler, error) {
	mux := http.NewServeMux()
	mux.Handle("/", rest)
	if b == nil {
		off := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			writeJSON(w, http.StatusNotFound, map[string]any{
				"error":  "runner bootstrap is off: set server.public_url to the URL runner machines reach runfleet at",
				"status": http.StatusNotFound,
			})
		})
		mux.Handle(metadata.MetadataPrefix, off)
		mux.Handle(metadata.CallbackPrefix, off)
		return mux, nil
	}
	h, err := metadata.New(metadata.Options{
		Engine:        eng,
		Tokens:        b.tokens,
		MetadataURL:   b.metadataURL,
		CallbackURL:   b.callbackURL,
		CACertBundle:  []byte(cfg.Metadata.CACertBundle),
		RunnerVersion: cfg.Metadata.RunnerVersion,
		CacheAgent:    b.cache.agentConfig(),
		Logger:        log,
	})
	if err != nil {
		return nil, fmt.Errorf("serve: %w", err)
	}
	mux.Handle(metadata.MetadataPrefix, h)
	mux.Handle(metadata.CallbackPrefix, h)
	b.cache.mount(mux)
	return mux, nil
}

// loadOrCreateKey reads the key file, or writes a new random key to it
// (0600, created exclusively so two starts cannot race to different keys).
func loadOrCreateKey(path string, log *slog.Logger) ([]byte, error) {
	data, err := os.ReadFile(path)
	if err == nil {
		key := []byte(strings.TrimSpace(string(data)))
		if len(key) < metadata.MinKeyBytes {
			return nil, fmt.Errorf("serve: instance token key file %s holds %d bytes, want at least %d (delete it to have a new one generated)", path, len(key), metadata.MinKeyBytes)
		}
		return key, nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("serve: read instance token key: %w", err)
	}
	raw := make([]byte, 32)
	_, _ = rand.Read(raw) // crypto/rand.Read never fails (Go 1.24+)
	key := []byte(hex.EncodeToString(raw))
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return loadOrCreateKey(path, log)
	}
	if err != nil {
		return nil, fmt.Errorf("serve: create instance token key: %w", err)
	}
	if _, err := f.Write(append(key, '\n')); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("serve: write instance token key: %w", err)
	}
	if err := f.Sync(); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("serve: write instance token key: %w", err)
	}
	if err := f.Close(); err != nil {
		return nil, fmt.Errorf("serve: write instance token key: %w", err)
	}
	log.Info("generated the instance token key (set server.instance_token_key_env or _file to supply your own)", "file", path)
	return key, nil
}
