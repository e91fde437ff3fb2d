package kit

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

func TestEventsBufferUntilEmit(t *testing.T) {
	rec := events.NewFakeRecorder(10)
	regarding := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}}
	var typedNil *corev1.Node
	var ev Events
	ev.Normal("Created", "Create", nil, "created %d", 2)
	ev.Warning("Failed", "Create", typedNil, "%s", strings.Repeat("x", 2*MaxMessageBytes))
	if len(rec.Events) != 0 {
		t.Fatal("events were recorded before Emit")
	}
	if diff := cmp.Diff([]string{"Created", "Failed"}, ev.Reasons()); diff != "" {
		t.Errorf("reasons (-want +got):\n%s", diff)
	}
	ev.Emit(rec, regarding)
	if ev.Len() != 0 {
		t.Error("Emit left events in the buffer")
	}
	first, second := <-rec.Events, <-rec.Events
	if first != "Normal Created created 2" {
		t.Errorf("first event %q", first)
	}
	if !strings.HasPrefix(second, "Warning Failed x") || len(second) > MaxMessageBytes+len("Warning Failed ") {
		t.Errorf("second event not truncated: %d bytes", len(second))
	}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n"}}
	ev.On(node).Warning("OnNode", "Sync", nil, "about the node")
	ev.Normal("Dropped", "Create", nil, "no object to record it on")
	ev.Emit(rec, nil)
	if got := <-rec.Events; got != "Warning OnNode about the node" {
		t.Errorf("targeted event %q", got)
	}
	if len(rec.Events) != 0 {
		t.Errorf("an event without an object was recorded: %q", <-rec.Events)
	}
	ev.Normal("Again", "Create", nil, "x")
	ev.Emit(nil, regarding) // a nil recorder drops them
	if ev.Len() != 0 {
		t.Error("Emit with a nil recorder left events in the buffer")
	}
}

func TestNameListAndTruncate(t *testing.T) {
	names := []string{"l", "k", "j", "i", "h", "g", "f", "e", "d", "c", "b", "a"}
	if got, want := NameList(names), "a, b, c, d, e, f, g, h, i, j and 2 more"; got != want {
		t.Errorf("NameList = %q, want %q", got, want)
	}
	if got := NameList([]string{"b", "a"}); got != "a, b" {
		t.Errorf("NameList = %q", got)
	}
	if got := Truncate("héllo", 5); got != "h..." {
		t.Errorf("Truncate cut a rune: %q", got)
	}
	if got := Truncate("short", 10); got != "short" {
		t.Errorf("Truncate changed a short string: %q", got)
	}
}

func TestEventsEmitAfter(t *testing.T) {
	regarding := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}}
	boom := errors.New("boom")
	tests := map[string]struct {
		wrote    bool
		err      error
		wantSent []string
	}{
		"the write failed: no event": {err: boom},
		"the write was refused for its content: the pass's events dropped, one StatusRefused": {
			err:      apierrors.NewInvalid(schema.GroupKind{Kind: "Pod"}, "p", field.ErrorList{field.TooLong(field.NewPath("status", "message"), "", 10)}),
			wantSent: []string{`Warning StatusRefused the API server refused the status drover computed: Pod "p" is invalid: status.message: Too long: may not be more than 10 bytes`},
		},
		"the write succeeded: events emitted": {wrote: true, wantSent: []string{"Normal Created created", "Warning Failed failed"}},
		"nothing to write: events emitted":    {wantSent: []string{"Normal Created created", "Warning Failed failed"}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			rec := events.NewFakeRecorder(10)
			var ev Events
			ev.Normal("Created", "Create", nil, "created")
			ev.Warning("Failed", "Create", nil, "failed")
			wrote, err := ev.EmitAfter(rec, regarding, func() (bool, error) {
				if len(rec.Events) != 0 {
					t.Error("events were recorded before the write")
				}
				return tc.wrote, tc.err
			})
			if wrote != tc.wrote || !errors.Is(err, tc.err) {
				t.Errorf("EmitAfter = %v, %v; want %v, %v", wrote, err, tc.wrote, tc.err)
			}
			var sent []string
			for len(rec.Events) > 0 {
				sent = append(sent, <-rec.Events)
			}
			if diff := cmp.Diff(tc.wantSent, sent); diff != "" {
				t.Errorf("recorded events (-want +got):\n%s", diff)
			}
			if ev.Len() != 0 {
				t.Errorf("%d events left in the buffer", ev.Len())
			}
		})
	}
}

// TestEventsEmitAfterWriteStatus: composed with WriteStatus, a status write that loses the optimistic lock
// emits nothing, and one that succeeds or finds nothing to change emits the pass's events.
func TestEventsEmitAfterWriteStatus(t *testing.T) {
	ctx := context.Background()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"}, Status: corev1.PodStatus{Phase: corev1.PodPending}}
	c := fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).WithObjects(pod).WithStatusSubresource(pod).Build()
	cached := &corev1.Pod{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(pod), cached); err != nil {
		t.Fatal(err)
	}
	rec := events.NewFakeRecorder(10)
	pass := func(obj *corev1.Pod, phase corev1.PodPhase) (bool, error) {
		var ev Events
		ev.Normal("Phase", "Update", nil, "%s", phase)
		want := corev1.PodStatus{Phase: phase}
		return ev.EmitAfter(rec, obj, func() (bool, error) { return WriteStatus(ctx, c, obj, podStatus, &want, nil) })
	}
	if wrote, err := pass(cached, corev1.PodRunning); err != nil || !wrote || len(rec.Events) != 1 {
		t.Fatalf("write: wrote %v, err %v, %d events; want a write and its event", wrote, err, len(rec.Events))
	}
	<-rec.Events
	if _, err := pass(cached, corev1.PodFailed); !apierrors.IsConflict(err) || len(rec.Events) != 0 {
		t.Fatalf("stale write: err %v, %d events; want a conflict and no event", err, len(rec.Events))
	}
	stored := &corev1.Pod{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(pod), stored); err != nil {
		t.Fatal(err)
	}
	if wrote, err := pass(stored, corev1.PodRunning); err != nil || wrote || len(rec.Events) != 1 {
		t.Fatalf("unchanged status: wrote %v, err %v, %d events; want no write and the event", wrote, err, len(rec.Events))
	}
}
