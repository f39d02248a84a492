package kubernetes

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
)

// Labels and annotations runfleet puts on the pods and Secrets it makes.
const (
	LabelManagedBy  = "app.kubernetes.io/managed-by"
	LabelController = "runfleet.dev/controller-id"
	LabelPoolID     = "runfleet.dev/pool-id"
	LabelInstance   = "runfleet.dev/instance"
	// AnnotationInstance keeps the instance's exact name (a label value is
	// limited to 63 characters; a name is not).
	AnnotationInstance = "runfleet.dev/instance-name"
	AnnotationPool     = "runfleet.dev/pool"

	managedBy = "runfleet"
)

// Ownership is what makes a pod this installation's and this pool's.
type Ownership struct {
	ControllerID string
	PoolID       string
}

// labelValue fits s into a label value (at most 63 characters of
// [A-Za-z0-9._-]): a longer or odder s keeps a readable prefix and a hash,
// so two different ids never share a value.
func labelValue(s string) string {
	ok := len(s) <= 63
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.') {
			ok = false
			break
		}
	}
	if ok && (s == "" || isAlnum(s[0]) && isAlnum(s[len(s)-1])) {
		return s
	}
	sum := sha256.Sum256([]byte(s))
	prefix := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			return r
		}
		return '-'
	}, strings.ToLower(s))
	if len(prefix) > 40 {
		prefix = prefix[:40]
	}
	prefix = strings.Trim(prefix, "-")
	if prefix == "" {
		return "h" + hex.EncodeToString(sum[:12])
	}
	return prefix + "-" + hex.EncodeToString(sum[:8])
}

func isAlnum(b byte) bool {
	return b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= '0' && b <= '9'
}

// ownedLabels are the labels every pod and Secret of o carries.
func (o Ownership) labels(instance string) map[string]string {
	m := map[string]string{
		LabelManagedBy:  managedBy,
		LabelController: labelValue(o.ControllerID),
		LabelPoolID:     labelValue(o.PoolID),
	}
	if instance != "" {
		m[LabelInstance] = labelValue(instance)
	}
	return m
}

// selector selects this installation's objects; with pool set, only that
// pool's.
func (o Ownership) selector(pool bool) string {
	reqs := []struct{ k, v string }{{LabelManagedBy, managedBy}, {LabelController, labelValue(o.ControllerID)}}
	if pool {
		reqs = append(reqs, struct{ k, v string }{LabelPoolID, labelValue(o.PoolID)})
	}
	sel := labels.NewSelector()
	for _, r := range reqs {
		req, err := labels.NewRequirement(r.k, selection.Equals, []string{r.v})
		if err != nil {
			panic(err) // labelValue always returns a valid value
		}
		sel = sel.Add(*req)
	}
	return sel.String()
}

// owns reports whether an object's labels say it is o's (the pool's too).
func (o Ownership) owns(l map[string]string) bool {
	return l[LabelManagedBy] == managedBy && l[LabelController] == labelValue(o.ControllerID) && l[LabelPoolID] == labelValue(o.PoolID)
}

// objectName is a Kubernetes object name (DNS-1123 subdomain, kept to a
// label's 63 characters so it is also a valid hostname) for an instance
// name. runfleet's instance names already are one; anything else is
// lower-cased, cleaned and, if changed, suffixed with a hash.
func objectName(instance string) string {
	clean := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' {
			return r
		}
		if r >= 'A' && r <= 'Z' {
			return r + 'a' - 'A'
		}
		return '-'
	}, instance)
	clean = strings.Trim(clean, "-")
	if clean == instance && len(clean) <= 58 && clean != "" {
		return clean
	}
	sum := sha256.Sum256([]byte(instance))
	if len(clean) > 44 {
		clean = strings.TrimRight(clean[:44], "-")
	}
	if clean == "" {
		clean = "runner"
	}
	return clean + "-" + hex.EncodeToString(sum[:6])
}

// secretName is the name of the Secret holding a pod's bootstrap credentials.
func secretName(pod string) string { return pod + "-bootstrap" }
