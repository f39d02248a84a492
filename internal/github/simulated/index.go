package simulated

import (
	"cmp"
	"slices"
	"unicode"
	"unicode/utf8"

	"github.com/runfleet/runfleet/internal/github"
)

// runnerIndex holds the registered runners by id, and by case-folded name
// and owner, so that a lookup costs the same with ten runners as with ten
// thousand: `runfleet serve` with a simulated GitHub looks a runner up by
// name for every job.
type runnerIndex struct {
	byID    map[int64]*RegisteredRunner
	byName  map[string]map[int64]*RegisteredRunner
	byOwner map[ownerKey]map[int64]*RegisteredRunner
}

// ownerKey is where a runner registers, compared as GitHub compares logins:
// without regard to case, and ignoring the installation used to
// authenticate.
type ownerKey struct {
	org, repo, enterprise string
}

func keyOf(o github.Owner) ownerKey {
	return ownerKey{org: foldKey(o.Org), repo: foldKey(o.Repo), enterprise: foldKey(o.Enterprise)}
}

func newRunnerIndex() runnerIndex {
	return runnerIndex{
		byID:    make(map[int64]*RegisteredRunner),
		byName:  make(map[string]map[int64]*RegisteredRunner),
		byOwner: make(map[ownerKey]map[int64]*RegisteredRunner),
	}
}

func (x runnerIndex) add(r *RegisteredRunner) {
	x.byID[r.ID] = r
	addTo(x.byName, foldKey(r.Name), r)
	addTo(x.byOwner, keyOf(r.Owner), r)
}

func (x runnerIndex) remove(r *RegisteredRunner) {
	delete(x.byID, r.ID)
	removeFrom(x.byName, foldKey(r.Name), r.ID)
	removeFrom(x.byOwner, keyOf(r.Owner), r.ID)
}

// named returns every runner called name at any owner, ignoring case.
func (x runnerIndex) named(name string) map[int64]*RegisteredRunner {
	return x.byName[foldKey(name)]
}

// find returns the runner called name at owner, ignoring case, or nil.
func (x runnerIndex) find(owner github.Owner, name string) *RegisteredRunner {
	for _, r := range x.named(name) {
		if sameOwner(r.Owner, owner) {
			return r
		}
	}
	return nil
}

// ownedBy returns the runners registered at owner, by id.
func (x runnerIndex) ownedBy(owner github.Owner) []*RegisteredRunner {
	return sortedByID(x.byOwner[keyOf(owner)])
}

// all returns every runner, by id.
func (x runnerIndex) all() []*RegisteredRunner {
	return sortedByID(x.byID)
}

func sortedByID(runners map[int64]*RegisteredRunner) []*RegisteredRunner {
	out := make([]*RegisteredRunner, 0, len(runners))
	for _, r := range runners {
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b *RegisteredRunner) int { return cmp.Compare(a.ID, b.ID) })
	return out
}

func addTo[K comparable](index map[K]map[int64]*RegisteredRunner, key K, r *RegisteredRunner) {
	set := index[key]
	if set == nil {
		set = make(map[int64]*RegisteredRunner)
		index[key] = set
	}
	set[r.ID] = r
}

func removeFrom[K comparable](index map[K]map[int64]*RegisteredRunner, key K, id int64) {
	set := index[key]
	delete(set, id)
	if len(set) == 0 {
		delete(index, key)
	}
}

// foldKey maps s to a key that two strings share exactly when
// strings.EqualFold says they are equal: each rune becomes the smallest rune
// of its Unicode simple case-folding orbit (so "k", "K" and the Kelvin sign
// all become "K"), and invalid UTF-8 becomes U+FFFD, as EqualFold decodes it.
func foldKey(s string) string {
	ascii := true
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			ascii = false
			break
		}
	}
	if ascii {
		// The smallest rune of an ASCII letter's orbit is its upper case.
		buf := []byte(s)
		for i, c := range buf {
			if 'a' <= c && c <= 'z' {
				buf[i] = c - ('a' - 'A')
			}
		}
		return string(buf)
	}
	buf := make([]rune, 0, len(s))
	for _, r := range s {
		buf = append(buf, foldRune(r))
	}
	return string(buf)
}

func foldRune(r rune) rune {
	smallest := r
	for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
		smallest = min(smallest, f)
	}
	return smallest
}
