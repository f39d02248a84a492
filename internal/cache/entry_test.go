package cache

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/runfleet/runfleet/internal/testclock"
)

func TestMatch(t *testing.T) {
	t0 := testclock.At(time.Date(2026, 12, 7, 4, 0, 0, 0, time.UTC)).Now()
	e := func(id int64, scope, key string, age time.Duration) Entry {
		return Entry{Ref: Ref{RepoID: 1, Scope: scope, Key: key, Version: "v"}, ID: id, Created: t0.Add(-age), Finalized: true}
	}
	const pr, main = "refs/pull/7/merge", "refs/heads/main"
	entries := []Entry{
		e(1, main, "deps-linux-aaa", 3*time.Hour),
		e(2, main, "deps-linux-bbb", 1*time.Hour), // newest on main
		e(3, pr, "deps-linux-ccc", 2*time.Hour),
		e(4, main, "deps-linux-exact", 5*time.Hour),
		{Ref: Ref{RepoID: 1, Scope: main, Key: "pending-x", Version: "v"}, ID: 5, Created: t0},
		{Ref: Ref{RepoID: 2, Scope: main, Key: "other-repo", Version: "v"}, ID: 6, Created: t0, Finalized: true},
		{Ref: Ref{RepoID: 1, Scope: main, Key: "other-version", Version: "w"}, ID: 7, Created: t0, Finalized: true},
	}
	tests := []struct {
		name    string
		scopes  []string
		keys    []string
		version string
		want    int64 // 0: miss
	}{
		{"exact beats a newer prefix match", []string{main}, []string{"deps-linux-exact"}, "v", 4},
		{"prefix takes the newest", []string{main}, []string{"deps-linux-"}, "v", 2},
		{"primary misses, restore key falls back", []string{main}, []string{"nothing", "deps-linux-a"}, "v", 1},
		{"own ref before default branch", []string{pr, main}, []string{"deps-linux-"}, "v", 3},
		{"default branch when own ref misses", []string{pr, main}, []string{"deps-linux-b"}, "v", 2},
		{"a scope not granted is not read", []string{pr}, []string{"deps-linux-a"}, "v", 0},
		{"pending entries are invisible", []string{main}, []string{"pending-"}, "v", 0},
		{"another repository's entries are invisible", []string{main}, []string{"other-repo"}, "v", 0},
		{"another version misses", []string{main}, []string{"other-version"}, "v", 0},
		{"the version must match", []string{main}, []string{"other-version"}, "w", 7},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := Match(entries, 1, tt.scopes, tt.keys, tt.version)
			if tt.want == 0 {
				if ok {
					t.Fatalf("Match = entry %d, want a miss", got.ID)
				}
				return
			}
			if !ok || got.ID != tt.want {
				t.Fatalf("Match = %d (ok %v), want %d", got.ID, ok, tt.want)
			}
		})
	}
}

func TestConflict(t *testing.T) {
	t0 := testclock.At(time.Date(2026, 12, 7, 4, 0, 0, 0, time.UTC)).Now()
	tests := []struct {
		name string
		e    Entry
		want bool
	}{
		{"finalized: first writer wins", Entry{Finalized: true, Created: t0.Add(-48 * time.Hour)}, true},
		{"pending upload under way", Entry{Created: t0.Add(-59 * time.Minute)}, true},
		{"pending upload abandoned", Entry{Created: t0.Add(-time.Hour)}, false},
	}
	for _, tt := range tests {
		if got := Conflict(tt.e, t0, time.Hour); got != tt.want {
			t.Errorf("%s: Conflict = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestPlanEviction(t *testing.T) {
	t0 := testclock.At(time.Date(2026, 12, 7, 4, 0, 0, 0, time.UTC)).Now()
	fin := func(id, size int64, idle time.Duration) Entry {
		return Entry{ID: id, Size: size, Finalized: true, Created: t0.Add(-idle - time.Hour), LastAccess: t0.Add(-idle)}
	}
	pend := func(id int64, age time.Duration) Entry {
		return Entry{ID: id, Created: t0.Add(-age), LastAccess: t0.Add(-age)}
	}
	tests := []struct {
		name    string
		entries []Entry
		p       EvictionPolicy
		want    []int64
	}{
		{"nothing to do", []Entry{fin(1, 10, time.Hour)}, EvictionPolicy{MaxAge: 7 * 24 * time.Hour, MaxBytes: 100}, nil},
		{"idle past max age", []Entry{fin(1, 10, 7*24*time.Hour), fin(2, 10, time.Hour)}, EvictionPolicy{MaxAge: 7 * 24 * time.Hour}, []int64{1}},
		{"over size: least recently accessed first", []Entry{fin(1, 60, time.Minute), fin(2, 60, time.Hour), fin(3, 60, 2*time.Hour)}, EvictionPolicy{MaxBytes: 100}, []int64{3, 2}},
		{"stale pending goes, fresh pending stays even over size", []Entry{pend(1, 2*time.Hour), pend(2, time.Minute), fin(3, 200, time.Minute)}, EvictionPolicy{MaxBytes: 100, PendingTTL: time.Hour}, []int64{1, 3}},
		{"no limits", []Entry{fin(1, 1<<40, 1000*time.Hour)}, EvictionPolicy{}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := PlanEviction(tt.entries, t0, tt.p)
			if len(got) != len(tt.want) {
				t.Fatalf("PlanEviction = %v, want %v", got, tt.want)
			}
			for i := range got {
				if got[i] != tt.want[i] {
					t.Fatalf("PlanEviction = %v, want %v", got, tt.want)
				}
			}
		})
	}
}

func TestValidateLookup(t *testing.T) {
	tests := []struct {
		name, key string
		restore   []string
		version   string
		field     string // "" when valid
	}{
		{"valid", "k", []string{"k-"}, "v", ""},
		{"empty key", "", nil, "v", "key"},
		{"comma", "a,b", nil, "v", "key"},
		{"long key", strings.Repeat("x", MaxKeyLength+1), nil, "v", "key"},
		{"512 is fine", strings.Repeat("x", MaxKeyLength), nil, "v", ""},
		{"bad restore key", "k", []string{"a,b"}, "v", "restore_keys"},
		{"eleven keys", "k", strings.Split("a,b,c,d,e,f,g,h,i,j", ","), "v", "restore_keys"},
		{"no version", "k", nil, "", "version"},
	}
	for _, tt := range tests {
		err := ValidateLookup(tt.key, tt.restore, tt.version)
		var ie *InvalidError
		switch {
		case tt.field == "" && err != nil:
			t.Errorf("%s: %v", tt.name, err)
		case tt.field != "" && (!errors.As(err, &ie) || ie.Field != tt.field || !errors.Is(err, ErrInvalid)):
			t.Errorf("%s: err = %v, want an InvalidError of %s", tt.name, err, tt.field)
		}
	}
}

func TestGrantFor(t *testing.T) {
	tests := []struct {
		name      string
		job       Job
		wantWrite string
		wantRead  []string
		wantErr   bool
	}{
		{"push to a branch", Job{RepoID: 1, Ref: "refs/heads/feat", DefaultBranch: "main"}, "refs/heads/feat", []string{"refs/heads/feat", "refs/heads/main"}, false},
		{"push to the default branch", Job{RepoID: 1, Ref: "refs/heads/main", DefaultBranch: "refs/heads/main"}, "refs/heads/main", []string{"refs/heads/main"}, false},
		{"tag", Job{RepoID: 1, Ref: "refs/tags/v1", DefaultBranch: "main"}, "refs/tags/v1", []string{"refs/tags/v1", "refs/heads/main"}, false},
		{"pull request reads its base then default", Job{RepoID: 1, Ref: "refs/pull/7/merge", PullRequest: true, BaseRef: "release", DefaultBranch: "main"},
			"refs/pull/7/merge", []string{"refs/pull/7/merge", "refs/heads/release", "refs/heads/main"}, false},
		{"pull_request_target on the default branch cannot write it", Job{RepoID: 1, Ref: "refs/heads/main", PullRequest: true, BaseRef: "main", DefaultBranch: "main"},
			"", []string{"refs/heads/main"}, false},
		{"no repository", Job{Ref: "refs/heads/x", DefaultBranch: "main"}, "", nil, true},
		{"not a ref", Job{RepoID: 1, Ref: "main", DefaultBranch: "main"}, "", nil, true},
		{"no default branch", Job{RepoID: 1, Ref: "refs/heads/x"}, "", nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g, err := GrantFor(tt.job)
			if tt.wantErr {
				if !errors.Is(err, ErrInvalid) {
					t.Fatalf("err = %v, want ErrInvalid", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if g.Write != tt.wantWrite || strings.Join(g.Read, " ") != strings.Join(tt.wantRead, " ") {
				t.Fatalf("grant = write %q read %v, want write %q read %v", g.Write, g.Read, tt.wantWrite, tt.wantRead)
			}
		})
	}
}
