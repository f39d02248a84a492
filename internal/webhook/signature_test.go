package webhook

import (
	"errors"
	"strings"
	"testing"
)

// GitHub's documented test vector ("Validating webhook deliveries").
const (
	vectorSecret    = "It's a Secret to Everybody"
	vectorBody      = "Hello, World!"
	vectorSignature = "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"
)

func TestSignMatchesGitHubTestVector(t *testing.T) {
	if got := Sign([]byte(vectorSecret), []byte(vectorBody)); got != vectorSignature {
		t.Fatalf("Sign = %s, want %s", got, vectorSignature)
	}
}

func TestVerifySignature(t *testing.T) {
	secret, body := []byte(vectorSecret), []byte(vectorBody)
	cases := []struct {
		name   string
		secret string
		body   string
		header string
		want   error
	}{
		{"github test vector", vectorSecret, vectorBody, vectorSignature, nil},
		{"surrounding whitespace", vectorSecret, vectorBody, " " + vectorSignature + " ", nil},
		{"missing", vectorSecret, vectorBody, "", ErrSignatureMissing},
		{"sha1 header value", vectorSecret, vectorBody, "sha1=" + strings.TrimPrefix(vectorSignature, "sha256="), ErrSignatureMalformed},
		{"no prefix", vectorSecret, vectorBody, strings.TrimPrefix(vectorSignature, "sha256="), ErrSignatureMalformed},
		{"not hex", vectorSecret, vectorBody, "sha256=" + strings.Repeat("zz", 32), ErrSignatureMalformed},
		{"too short", vectorSecret, vectorBody, vectorSignature[:len(vectorSignature)-2], ErrSignatureMalformed},
		{"body changed by one byte", vectorSecret, "Hello, World?", vectorSignature, ErrSignatureMismatch},
		{"other secret", "It's a Secret to Nobody", vectorBody, vectorSignature, ErrSignatureMismatch},
		{"one digit flipped", vectorSecret, vectorBody, vectorSignature[:len(vectorSignature)-1] + "f", ErrSignatureMismatch},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := VerifySignature([]byte(tc.secret), []byte(tc.body), tc.header)
			if !errors.Is(err, tc.want) || (tc.want == nil && err != nil) {
				t.Fatalf("VerifySignature = %v, want %v", err, tc.want)
			}
		})
	}
	if err := VerifySignature(secret, body, Sign(secret, body)); err != nil {
		t.Fatalf("a body signed with Sign must verify: %v", err)
	}
}
