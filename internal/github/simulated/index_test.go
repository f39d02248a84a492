package simulated

import (
	"strings"
	"testing"
)

// The index must find exactly what the scan with strings.EqualFold found,
// including Unicode's odd cases and invalid UTF-8.
func TestFoldKeyAgreesWithEqualFold(t *testing.T) {
	words := []string{
		"", "runfleet-a", "RUNFLEET-A", "Runfleet-A", "runfleet-b",
		"k", "K", "\u212a", // Kelvin sign folds with k
		"s", "S", "\u017f", // long s folds with s
		"σ", "ς", "Σ", "ß", "ẞ", "ss",
		"İ", "i", "I", "ı",
		"\xff", "\xfe", "\ufffd", "a\xffb", "A\xfeB",
		"Ǆ", "ǅ", "ǆ", "ﬀ", "ff",
	}
	for _, a := range words {
		for _, b := range words {
			if want, got := strings.EqualFold(a, b), foldKey(a) == foldKey(b); want != got {
				t.Errorf("%q vs %q: EqualFold %v, same fold key %v", a, b, want, got)
			}
		}
	}
}
