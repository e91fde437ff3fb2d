package tapp

import (
	"fmt"
	"reflect"
	"strings"

	"github.com/drover-dev/drover/internal/tapp/core"

	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tkestackv1 "github.com/drover-dev/drover/api/tkestack/apps/v1"
	"github.com/drover-dev/drover/internal/kit"
)

// Event actions (events.k8s.io requires one). The reasons are the tkestackv1.Reason* constants.
const (
	actionCreate    = "Create"
	actionDelete    = "Delete"
	actionUpdate    = "Update"
	actionAdopt     = "Adopt"
	actionRelease   = "Release"
	actionReconcile = "Reconcile"
	actionPrune     = "PruneTemplates"
)

// actionFor returns the event action of a ReplicaFailure reason.
func actionFor(reason string) string {
	switch reason {
	case tkestackv1.ReasonFailedCreate:
		return actionCreate
	case tkestackv1.ReasonFailedDelete:
		return actionDelete
	case tkestackv1.ReasonFailedUpdate:
		return actionUpdate
	default:
		return actionReconcile
	}
}

// failedGroup is the message of several failed writes of a reason, a format of their count.
func failedGroup(reason string) string {
	switch reason {
	case tkestackv1.ReasonFailedCreate:
		return "Creating %d objects failed"
	case tkestackv1.ReasonFailedDelete:
		return "Deleting %d objects failed"
	default:
		return "Updating %d objects failed"
	}
}

// passEvents aggregates the events of a pass by reason, the kit's rule of one event per reason per pass
// (a scale-up of 1,000 instances is one SuccessfulCreate). Each reason gathers the objects it concerns in
// groups of the same change: a group of one object keeps that object's own message ("Created pod web-0"),
// a group of several is counted and named with kit.NameList ("Created 3 pods: web-0, web-1, web-2"). An
// event that concerns one object has it as related object. The zero value is ready.
type passEvents struct {
	order []string // reasons, in the order they first occurred
	by    map[string]*reasonEvents
}

// reasonEvents is what one reason of a pass concerns.
type reasonEvents struct {
	eventtype, action string
	groups            []*entryGroup
	notes             []string // messages about no single object: plan issues, pruned templates
	objects           []client.Object
}

// entry is one object an event reason concerns.
type entry struct {
	obj client.Object
	// group is the message of a group of several such objects, a format of their count (one %d); note is
	// the message of the object alone.
	group, note string
	// name lists the object in a group of several (its name when empty); detail follows the names of the
	// group, from its first entry (a failure's error).
	name, detail string
}

// entryGroup is the objects of a reason that had the same change.
type entryGroup struct {
	format, first, detail string
	names                 []string
}

// normal records that the pass did something to an object (a Normal event).
func (e *passEvents) normal(reason, action string, en entry) {
	e.reason(corev1.EventTypeNormal, reason, action).add(en)
}

// warning records a problem with an object (a Warning event).
func (e *passEvents) warning(reason, action string, en entry) {
	e.reason(corev1.EventTypeWarning, reason, action).add(en)
}

// note records a message about no single object.
func (e *passEvents) note(eventtype, reason, action, note string) {
	r := e.reason(eventtype, reason, action)
	r.notes = append(r.notes, note)
}

func (e *passEvents) reason(eventtype, reason, action string) *reasonEvents {
	if e.by == nil {
		e.by = map[string]*reasonEvents{}
	}
	r, ok := e.by[reason]
	if !ok {
		r = &reasonEvents{eventtype: eventtype, action: action}
		e.by[reason] = r
		e.order = append(e.order, reason)
	}
	return r
}

func (r *reasonEvents) add(en entry) {
	name := en.name
	if name == "" {
		name = objectName(en.obj)
	}
	var g *entryGroup
	for _, x := range r.groups {
		if x.format == en.group {
			g = x
			break
		}
	}
	if g == nil {
		g = &entryGroup{format: en.group, first: en.note, detail: en.detail}
		r.groups = append(r.groups, g)
	}
	g.names = append(g.names, name)
	r.objects = append(r.objects, en.obj)
}

// message renders the reason's groups, then its notes.
func (r *reasonEvents) message() string {
	parts := make([]string, 0, len(r.groups)+len(r.notes))
	for _, g := range r.groups {
		if len(g.names) == 1 {
			parts = append(parts, g.first)
			continue
		}
		part := fmt.Sprintf(g.format, len(g.names)) + ": " + kit.NameList(g.names)
		if g.detail != "" {
			part += ": " + g.detail
		}
		parts = append(parts, part)
	}
	return strings.Join(append(parts, r.notes...), "; ")
}

// buffer returns the pass's events, one per reason.
func (e *passEvents) buffer() *kit.Events {
	ev := &kit.Events{}
	for _, reason := range e.order {
		r := e.by[reason]
		var related runtime.Object
		if len(r.objects) == 1 {
			related = r.objects[0]
		}
		if r.eventtype == corev1.EventTypeWarning {
			ev.Warning(reason, r.action, related, "%s", r.message())
		} else {
			ev.Normal(reason, r.action, related, "%s", r.message())
		}
	}
	return ev
}

// objectName is the name of obj, "" for none.
func objectName(obj client.Object) string {
	if obj == nil || reflect.ValueOf(obj).IsNil() {
		return ""
	}
	return obj.GetName()
}

// issueWarnings records the Warnings of plan issues (templates not found, name conflicts, malformed pods,
// invalid spec) when the ReplicaFailure condition changed, so that a pass that changes nothing emits
// nothing; failed writes have their own Warning, which these join when they share its reason.
func (rn *run) issueWarnings(status *tkestackv1.TAppStatus) {
	if !replicaFailureChanged(&rn.app.Status, status) {
		return
	}
	for _, w := range core.IssueWarnings(rn.planIssues) {
		rn.events.note(corev1.EventTypeWarning, w.Reason, actionReconcile, w.Note)
	}
}

// replicaFailureChanged reports whether the ReplicaFailure condition changed status, reason or message.
func replicaFailureChanged(old, now *tkestackv1.TAppStatus) bool {
	o := apimeta.FindStatusCondition(old.Conditions, tkestackv1.TAppReplicaFailure)
	n := apimeta.FindStatusCondition(now.Conditions, tkestackv1.TAppReplicaFailure)
	switch {
	case n == nil:
		return false
	case o == nil:
		return true
	default:
		return o.Status != n.Status || o.Reason != n.Reason || o.Message != n.Message
	}
}
