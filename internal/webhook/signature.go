package webhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strings"
)

// SignatureHeader carries GitHub's HMAC-SHA256 of the raw request body.
const SignatureHeader = "X-Hub-Signature-256"

const signaturePrefix = "sha256="

// Errors VerifySignature returns; match them with errors.Is.
var (
	ErrSignatureMissing   = errors.New("webhook: X-Hub-Signature-256 header is missing")
	ErrSignatureMalformed = errors.New("webhook: X-Hub-Signature-256 is not of the form sha256=<64 hex digits>")
	ErrSignatureMismatch  = errors.New("webhook: X-Hub-Signature-256 does not match the body and the configured secret")
)

// Sign returns the X-Hub-Signature-256 value GitHub would send for body:
// "sha256=" followed by the lowercase hex HMAC-SHA256 of body keyed by secret.
func Sign(secret, body []byte) string {
	return signaturePrefix + hex.EncodeToString(mac(secret, body))
}

// VerifySignature checks header against the HMAC-SHA256 of the raw body. The
// comparison is constant-time, so response timing does not leak how much of a
// forged signature was right.
func VerifySignature(secret, body []byte, header string) error {
	header = strings.TrimSpace(header)
	if header == "" {
		return ErrSignatureMissing
	}
	hexSum, ok := strings.CutPrefix(header, signaturePrefix)
	if !ok || len(hexSum) != 2*sha256.Size {
		return ErrSignatureMalformed
	}
	got, err := hex.DecodeString(hexSum)
	if err != nil {
		return ErrSignatureMalformed
	}
	if !hmac.Equal(got, mac(secret, body)) {
		return ErrSignatureMismatch
	}
	return nil
}

func mac(secret, body []byte) []byte {
	h := hmac.New(sha256.New, secret)
	h.Write(body)
	return h.Sum(nil)
}
