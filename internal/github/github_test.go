package github

import (
	"errors"
	"testing"
)

func TestParseOwnerRoundTripsAndNamesItsURL(t *testing.T) {
	for in, url := range map[string]string{
		"octo-org":            "https://github.com/octo-org",
		"octo-org/hello":      "https://github.com/octo-org/hello",
		"enterprise:octo-ent": "https://github.com/enterprises/octo-ent",
	} {
		o, err := ParseOwner(in)
		if err != nil {
			t.Fatalf("%s: %v", in, err)
		}
		if o.String() != in || o.URL() != url {
			t.Errorf("%s: String %q, URL %q", in, o.String(), o.URL())
		}
	}
	for _, bad := range []string{"", "/repo", "org/", "a/b/c", "enterprise:", "enterprise:a/b"} {
		if _, err := ParseOwner(bad); err == nil {
			t.Errorf("%q: want an error", bad)
		}
	}
}

func TestPermissionErrorIsMisconfiguration(t *testing.T) {
	var err error = &PermissionError{Op: "RemoveRunner", Message: "Resource not accessible by integration"}
	if !errors.Is(err, ErrMisconfigured) {
		t.Fatal("a missing permission must not be retried")
	}
}
