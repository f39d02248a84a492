package runner

import "strings"

// NamePrefix marks every runner and machine runfleet creates, so
// reconciliation never touches runners it did not create.
const NamePrefix = "runfleet-"

// ControllerLabelPrefix starts the runner label that names the runfleet
// installation (controller) that registered a runner.
const ControllerLabelPrefix = "runfleet-controller-"

// ControllerLabel is the runner label that marks runners registered by the
// controller with this id; "" when the id is empty.
func ControllerLabel(controllerID string) string {
	if controllerID == "" {
		return ""
	}
	return ControllerLabelPrefix + controllerID
}

// OursByName reports whether a runner or machine name is one runfleet
// could have made: the first, cheap half of the ownership rule.
func OursByName(name string) bool {
	return strings.HasPrefix(name, NamePrefix)
}

// RegisteredBy reports whether a GitHub runner with this name and these
// labels was registered by the controller controllerID: named by runfleet
// and, when the controller has an id, labelled with it. This is the one
// "is this runner ours" rule; the reconciler's sweep of GitHub's runners
// and the GitHub client's recovery of a taken JIT name both use it. GitHub
// compares runner names and labels without regard to case, and so does
// the rule.
func RegisteredBy(controllerID, name string, labels []string) bool {
	if !hasPrefixFold(name, NamePrefix) {
		return false
	}
	own := ControllerLabel(controllerID)
	if own == "" {
		return true
	}
	for _, l := range labels {
		if strings.EqualFold(l, own) {
			return true
		}
	}
	return false
}

// ControllerIDOf returns the id of the controller a runner's labels name
// (the label ControllerLabel makes), "" when they name none: who
// registers a runner with these labels, for RegisteredBy.
func ControllerIDOf(labels []string) string {
	for _, l := range labels {
		if hasPrefixFold(l, ControllerLabelPrefix) {
			return l[len(ControllerLabelPrefix):]
		}
	}
	return ""
}

// hasPrefixFold is strings.HasPrefix without regard to case, for an ASCII
// prefix.
func hasPrefixFold(s, prefix string) bool {
	return len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix)
}
