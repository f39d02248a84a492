package githubtest

import (
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// GitHub's answers to a bad App JWT.
const (
	msgJWTUndecodable = "A JSON web token could not be decoded"
	msgJWTExpired     = "'Expiration time' claim ('exp') must be a numeric value representing the future time at which the assertion expires"
	msgJWTTooLong     = "'Expiration time' claim ('exp') is too far in the future"
	msgJWTIssuedAt    = "'Issued at' claim ('iat') must be an Integer representing the time that the assertion was issued"
	msgJWTNoApp       = "Integration not found"
)

// maxJWTLifetime is the longest exp - iat GitHub accepts.
const maxJWTLifetime = 10 * time.Minute

// jwtClockSkew is how far in the future iat may be; GitHub recommends
// back-dating iat by 60 s for clock drift, so it must tolerate some.
const jwtClockSkew = 60 * time.Second

// appIdentity is the GitHub App the server trusts.
type appIdentity struct {
	id  int64
	key *rsa.PublicKey
}

// AppKey is a GitHub App's RSA key pair: the private key in the PEM form
// GitHub hands out (for ghinstallation), the public key for WithApp.
type AppKey struct {
	PrivateKeyPEM []byte
	PublicKey     *rsa.PublicKey
}

// GenerateAppKey makes a 2048-bit App key pair, as GitHub's are.
func GenerateAppKey(t testing.TB) AppKey {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatalf("githubtest: generating an App key: %v", err)
	}
	block := &pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)}
	return AppKey{PrivateKeyPEM: pem.EncodeToMemory(block), PublicKey: &key.PublicKey}
}

type jwtClaims struct {
	Issuer    json.RawMessage `json:"iss"`
	IssuedAt  *float64        `json:"iat"`
	ExpiresAt *float64        `json:"exp"`
}

// authenticateApp checks an App JWT as GitHub does: RS256 signed by the
// App's key, iss = the App id, unexpired, at most ten minutes long.
func (s *Server) authenticateApp(req *request, token string) (*identity, reply, bool) {
	fail := func(msg string) (*identity, reply, bool) {
		return nil, errorReply(http.StatusUnauthorized, msg, req.route.docs), false
	}
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return fail(msgJWTUndecodable)
	}
	var header struct {
		Alg string `json:"alg"`
	}
	var claims jwtClaims
	if decodeSegment(parts[0], &header) != nil || decodeSegment(parts[1], &claims) != nil || header.Alg != "RS256" {
		return fail(msgJWTUndecodable)
	}
	sig, err := base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil {
		return fail(msgJWTUndecodable)
	}
	appID, err := strconv.ParseInt(issuer(claims.Issuer), 10, 64)
	app := s.apps[appID]
	if err != nil || app == nil {
		return fail(msgJWTNoApp)
	}
	digest := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	if rsa.VerifyPKCS1v15(app.key, crypto.SHA256, digest[:], sig) != nil {
		return fail(msgJWTUndecodable)
	}
	now := s.now()
	if claims.IssuedAt == nil || unix(*claims.IssuedAt).After(now.Add(jwtClockSkew)) {
		return fail(msgJWTIssuedAt)
	}
	if claims.ExpiresAt == nil || !unix(*claims.ExpiresAt).After(now) {
		return fail(msgJWTExpired)
	}
	if unix(*claims.ExpiresAt).Sub(unix(*claims.IssuedAt)) > maxJWTLifetime {
		return fail(msgJWTTooLong)
	}
	id := strconv.FormatInt(app.id, 10)
	return &identity{key: "app:" + id, subject: "app ID " + id, app: app}, reply{}, true
}

func decodeSegment(seg string, into any) error {
	b, err := base64.RawURLEncoding.DecodeString(seg)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, into)
}

// issuer reads iss, which GitHub accepts as a number or a string.
func issuer(raw json.RawMessage) string {
	var str string
	if json.Unmarshal(raw, &str) == nil {
		return str
	}
	var num json.Number
	if json.Unmarshal(raw, &num) == nil {
		return num.String()
	}
	return ""
}

func unix(secs float64) time.Time { return time.Unix(int64(secs), 0) }

// installationTokenBody is the 201 body of the access-token endpoint.
type installationTokenBody struct {
	Token               string            `json:"token"`
	ExpiresAt           string            `json:"expires_at"`
	Permissions         map[string]string `json:"permissions"`
	RepositorySelection string            `json:"repository_selection"`
}

// installedBy reports whether inst is an installation of the App who
// authenticated as (GitHub answers 404 for another App's installation).
func (s *Server) installedBy(inst *installation, who *identity) bool {
	return who != nil && who.app != nil && s.appOf(inst) == who.app.id
}

// appOf is the id of the App inst installs.
func (s *Server) appOf(inst *installation) int64 {
	if inst.appID != 0 {
		return inst.appID
	}
	return s.firstApp
}

// handleAccessToken issues an installation access token.
func (s *Server) handleAccessToken(req *request) reply {
	id, err := strconv.ParseInt(req.params["installation_id"], 10, 64)
	inst, ok := s.installations[id]
	if err != nil || !ok || !s.installedBy(inst, req.who) {
		return errorReply(http.StatusNotFound, "Not Found", req.route.docs)
	}
	if !inst.suspendedAt.IsZero() {
		return errorReply(http.StatusForbidden, msgInstallationSuspended, req.route.docs)
	}
	token := "ghs_" + randomAlnum(36)
	expires := s.now().Add(s.tokenTTL).UTC().Truncate(time.Second)
	s.tokens[token] = &installationToken{installation: inst, expiresAt: expires}
	return jsonReply(http.StatusCreated, installationTokenBody{
		Token:     token,
		ExpiresAt: expires.Format(time.RFC3339),
		Permissions: map[string]string{
			"actions": "write", "administration": "write", "metadata": "read", "organization_self_hosted_runners": "write",
		},
		RepositorySelection: "all",
	})
}

const alnum = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"

func randomAlnum(n int) string {
	buf := make([]byte, n)
	if _, err := rand.Read(buf); err != nil {
		panic(fmt.Sprintf("githubtest: crypto/rand: %v", err))
	}
	for i, b := range buf {
		buf[i] = alnum[int(b)%len(alnum)]
	}
	return string(buf)
}
