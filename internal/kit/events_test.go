package kit

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
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
