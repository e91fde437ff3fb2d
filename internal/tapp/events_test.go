package tapp

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"

	tkestackv1 "github.com/drover-dev/drover/api/tkestack/apps/v1"
)

// relatedRecorder notes "<reason> <related name>" of each event.
type relatedRecorder struct {
	events.EventRecorder
	related []string
}

func (r *relatedRecorder) Eventf(regarding, related runtime.Object, eventtype, reason, action, note string, args ...any) {
	name := "-"
	if p, ok := related.(*corev1.Pod); ok {
		name = p.Name
	}
	r.related = append(r.related, reason+" "+name)
	r.EventRecorder.Eventf(regarding, related, eventtype, reason, action, note, args...)
}

// TestPassEventsOnePerReason: the events of a pass are one per reason, in the order the reasons first
// occurred; an object alone keeps its own message and is the related object, several are counted and
// named, and notes follow the objects.
func TestPassEventsOnePerReason(t *testing.T) {
	pod := func(name string) *corev1.Pod { return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}} }
	created := func(name string) entry {
		return entry{obj: pod(name), group: "Created %d pods", note: "Created pod " + name}
	}
	var pe passEvents
	for i := range 12 {
		pe.normal(tkestackv1.ReasonSuccessfulCreate, actionCreate, created(fmt.Sprintf("web-%02d", i)))
	}
	pe.normal(tkestackv1.ReasonAdopted, actionAdopt, entry{obj: pod("web-x"), group: "Adopted %d pods", note: "Adopted pod web-x"})
	pe.warning(tkestackv1.ReasonFailedUpdate, actionUpdate, entry{obj: pod("web-a"), group: failedGroup(tkestackv1.ReasonFailedUpdate),
		note: "patching pod web-a: boom", detail: "patching pod web-a: boom"})
	pe.warning(tkestackv1.ReasonFailedUpdate, actionUpdate, entry{obj: pod("web-b"), group: failedGroup(tkestackv1.ReasonFailedUpdate),
		note: "patching pod web-b: bang", detail: "patching pod web-b: bang"})
	pe.note(corev1.EventTypeWarning, tkestackv1.ReasonFailedUpdate, actionReconcile, "FailedUpdate: 3")

	fake := events.NewFakeRecorder(10)
	rec := &relatedRecorder{EventRecorder: fake}
	pe.buffer().Emit(rec, &tkestackv1.TApp{})
	var got []string
	for len(fake.Events) > 0 {
		got = append(got, <-fake.Events)
	}
	want := []string{
		"Normal SuccessfulCreate Created 12 pods: web-00, web-01, web-02, web-03, web-04, web-05, web-06, web-07, web-08, web-09 and 2 more",
		"Normal Adopted Adopted pod web-x",
		"Warning FailedUpdate Updating 2 objects failed: web-a, web-b: patching pod web-a: boom; FailedUpdate: 3",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"SuccessfulCreate -", "Adopted web-x", "FailedUpdate -"}, rec.related); diff != "" {
		t.Errorf("related objects (-want +got):\n%s", diff)
	}
}
