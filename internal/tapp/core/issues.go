package core

import (
	"fmt"
	"slices"
	"strings"

	tkestackv1 "github.com/drover-dev/drover/api/tkestack/apps/v1"
	"github.com/drover-dev/drover/internal/kit"
)

// Issue is one thing a pass could not realise: it feeds the ReplicaFailure condition and a Warning
// event. Planning reports TemplateNotFound, PodNameConflict, MalformedPod and InvalidSpec; the reconciler
// appends FailedCreate, FailedDelete and FailedUpdate for writes that failed.
type Issue struct {
	// Reason is one of the ReplicaFailure reasons (tkestackv1.ReasonFailedCreate, ...).
	Reason string
	// Subject is what the issue is about: an instance id, a pod name or a spec field path.
	Subject string
	// Message is a human-readable description for the Warning event.
	Message string
}

// issueOrder is the precedence of ReplicaFailure reasons: the condition's reason is the first one present.
var issueOrder = []string{
	tkestackv1.ReasonFailedCreate,
	tkestackv1.ReasonFailedDelete,
	tkestackv1.ReasonFailedUpdate,
	tkestackv1.ReasonTemplateNotFound,
	tkestackv1.ReasonPodNameConflict,
	tkestackv1.ReasonMalformedPod,
	tkestackv1.ReasonInvalidSpec,
}

// maxSubjectsPerReason bounds how many subjects the ReplicaFailure message lists per reason.
const maxSubjectsPerReason = 10

// issueRank returns the position of a reason in issueOrder; unknown reasons sort last.
func issueRank(reason string) int {
	if i := slices.Index(issueOrder, reason); i >= 0 {
		return i
	}
	return len(issueOrder)
}

// maxIssueMessage bounds the message of the one issue per reason the ReplicaFailure message quotes.
const maxIssueMessage = 256

// summarizeIssues returns the ReplicaFailure reason and message for a set of issues: the reason of highest
// precedence, and per reason the sorted, de-duplicated subjects (at most ten, then "and N more") and the
// message of the lowest subject that has one (the API server's answer to a failed write, say), so the
// condition says why. It returns empty strings when there are no issues.
func summarizeIssues(issues []Issue) (reason, message string) {
	if len(issues) == 0 {
		return "", ""
	}
	byReason := map[string][]string{}
	first := map[string]Issue{} // the first issue of each reason with a message, lowest subject first
	for _, is := range issues {
		byReason[is.Reason] = append(byReason[is.Reason], is.Subject)
		if f, ok := first[is.Reason]; is.Message != "" && (!ok || compareSubjects(is.Subject, f.Subject) < 0) {
			first[is.Reason] = is
		}
	}
	reasons := make([]string, 0, len(byReason))
	for r := range byReason {
		reasons = append(reasons, r)
	}
	slices.SortFunc(reasons, func(a, b string) int {
		if d := issueRank(a) - issueRank(b); d != 0 {
			return d
		}
		return strings.Compare(a, b)
	})
	parts := make([]string, 0, len(reasons))
	for _, r := range reasons {
		part := r + ": " + subjectList(byReason[r])
		if f, ok := first[r]; ok {
			part += fmt.Sprintf(" (%s: %s)", f.Subject, kit.Truncate(f.Message, maxIssueMessage))
		}
		parts = append(parts, part)
	}
	return reasons[0], strings.Join(parts, "; ")
}

// subjectList sorts subjects (numerically when they are ids), removes duplicates and truncates the list.
func subjectList(subjects []string) string {
	slices.SortFunc(subjects, compareSubjects)
	subjects = slices.Compact(subjects)
	if len(subjects) <= maxSubjectsPerReason {
		return strings.Join(subjects, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(subjects[:maxSubjectsPerReason], ", "),
		len(subjects)-maxSubjectsPerReason)
}

func compareSubjects(a, b string) int {
	ia, okA := tkestackv1.ParseInstanceID(a)
	ib, okB := tkestackv1.ParseInstanceID(b)
	switch {
	case okA && okB:
		return ia - ib
	case okA:
		return -1
	case okB:
		return 1
	default:
		return strings.Compare(a, b)
	}
}

// IDIssue returns an issue about an instance id.
func IDIssue(reason string, id int, format string, args ...any) Issue {
	return Issue{Reason: reason, Subject: tkestackv1.FormatInstanceID(id), Message: fmt.Sprintf(format, args...)}
}

// maxIssuesPerEvent bounds the issues one Warning event lists.
const maxIssuesPerEvent = 10

// IssueWarning is the Warning event of the issues of one reason.
type IssueWarning struct{ Reason, Note string }

// IssueWarnings groups issues into one Warning per reason, in the precedence order of ReplicaFailure.
func IssueWarnings(issues []Issue) []IssueWarning {
	byReason := map[string][]string{}
	for _, is := range issues {
		byReason[is.Reason] = append(byReason[is.Reason], is.Message)
	}
	reasons := make([]string, 0, len(byReason))
	for reason := range byReason {
		reasons = append(reasons, reason)
	}
	slices.SortFunc(reasons, func(a, b string) int {
		if d := issueRank(a) - issueRank(b); d != 0 {
			return d
		}
		return strings.Compare(a, b)
	})
	out := make([]IssueWarning, 0, len(reasons))
	for _, reason := range reasons {
		msgs := slices.Compact(slices.Sorted(slices.Values(byReason[reason])))
		note := strings.Join(msgs[:min(len(msgs), maxIssuesPerEvent)], "; ")
		if len(msgs) > maxIssuesPerEvent {
			note += fmt.Sprintf("; and %d more", len(msgs)-maxIssuesPerEvent)
		}
		out = append(out, IssueWarning{Reason: reason, Note: truncateMessage(note)})
	}
	return out
}
