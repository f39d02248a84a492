package runner

import (
	"fmt"
	"strings"
)

// Owner is where runners register: an organization, a repository or an
// enterprise, with the App installation to authenticate as (0 = default).
type Owner struct {
	Org            string
	Repo           string // empty for organization and enterprise owners
	Enterprise     string // set only for enterprise owners
	InstallationID int64
}

// ParseOwner reads "org", "org/repo" or "enterprise:slug".
func ParseOwner(s string) (Owner, error) {
	s = strings.TrimSpace(s)
	if slug, ok := strings.CutPrefix(s, "enterprise:"); ok {
		if slug == "" || strings.Contains(slug, "/") {
			return Owner{}, fmt.Errorf("owner %q: enterprise slug must be one path segment", s)
		}
		return Owner{Enterprise: slug}, nil
	}
	org, repo, hasRepo := strings.Cut(s, "/")
	if org == "" || (hasRepo && (repo == "" || strings.Contains(repo, "/"))) {
		return Owner{}, fmt.Errorf("owner %q: want \"org\", \"org/repo\" or \"enterprise:slug\"", s)
	}
	return Owner{Org: org, Repo: repo}, nil
}

// MarshalText writes the owner as String does: a record keeps its owner as
// "org", "org/repo" or "enterprise:slug", as it always has. The
// installation is not part of it (records keep theirs beside it).
func (o Owner) MarshalText() ([]byte, error) { return []byte(o.String()), nil }

// UnmarshalText reads what MarshalText wrote; "" is no owner (a record
// made before owners were kept).
func (o *Owner) UnmarshalText(text []byte) error {
	if len(text) == 0 {
		*o = Owner{}
		return nil
	}
	parsed, err := ParseOwner(string(text))
	if err != nil {
		return err
	}
	*o = parsed
	return nil
}

// IsZero reports whether no owner is set.
func (o Owner) IsZero() bool { return o.Org == "" && o.Enterprise == "" }

// WithInstallation is the owner authenticated as installation id.
func (o Owner) WithInstallation(id int64) Owner {
	o.InstallationID = id
	return o
}

// String is the inverse of ParseOwner.
func (o Owner) String() string {
	switch {
	case o.IsZero():
		return ""
	case o.Enterprise != "":
		return "enterprise:" + o.Enterprise
	case o.Repo != "":
		return o.Org + "/" + o.Repo
	default:
		return o.Org
	}
}

// URL is the owner's page on github.com, the URL a runner registers at.
func (o Owner) URL() string {
	switch {
	case o.Enterprise != "":
		return "https://github.com/enterprises/" + o.Enterprise
	case o.Repo != "":
		return "https://github.com/" + o.Org + "/" + o.Repo
	default:
		return "https://github.com/" + o.Org
	}
}
