package persistentpodstate

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/types"

	"github.com/drover-dev/drover/internal/persistentpodstate/core"
)

func key(uid types.UID, k string) core.InLifeKey { return core.InLifeKey{UID: uid, Key: k} }

// forPods returns only the observations about the given pods, as a copy the caller owns; nil when there
// are none. A later observation of the same pod and key replaces the earlier one.
func TestInLifeObserveAndForPods(t *testing.T) {
	l := newInLife()
	l.observe("a", "k1", "v1")
	l.observe("a", "k1", "v2")
	l.observe("a", "k2", "x")
	l.observe("b", "k1", "y")

	tests := map[string]struct {
		uids map[types.UID]bool
		want map[core.InLifeKey]string
	}{
		"one pod":       {uids: map[types.UID]bool{"a": true}, want: map[core.InLifeKey]string{key("a", "k1"): "v2", key("a", "k2"): "x"}},
		"both pods":     {uids: map[types.UID]bool{"a": true, "b": true}, want: map[core.InLifeKey]string{key("a", "k1"): "v2", key("a", "k2"): "x", key("b", "k1"): "y"}},
		"unknown pod":   {uids: map[types.UID]bool{"c": true}},
		"no pods":       {},
		"pod set false": {uids: map[types.UID]bool{"a": false}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got := l.forPods(tc.uids)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("forPods (-want +got):\n%s", diff)
			}
		})
	}

	got := l.forPods(map[types.UID]bool{"a": true})
	delete(got, key("a", "k1"))
	if _, ok := l.forPods(map[types.UID]bool{"a": true})[key("a", "k1")]; !ok {
		t.Error("changing the returned map changed the observations")
	}
}

// consume drops the observations a pass applied, but keeps one whose value changed again meanwhile (a
// later pass applies that one).
func TestInLifeConsume(t *testing.T) {
	l := newInLife()
	l.observe("a", "k1", "v1")
	l.observe("a", "k2", "x")
	l.observe("b", "k1", "y")
	applied := l.forPods(map[types.UID]bool{"a": true, "b": true})
	l.observe("a", "k2", "x2") // changed again after the pass read it

	l.consume([]core.InLifeKey{key("a", "k1"), key("a", "k2")}, applied)
	want := map[core.InLifeKey]string{key("a", "k2"): "x2", key("b", "k1"): "y"}
	if diff := cmp.Diff(want, l.forPods(map[types.UID]bool{"a": true, "b": true})); diff != "" {
		t.Errorf("after consume (-want +got):\n%s", diff)
	}
}

// forgetPod drops every observation of a deleted pod, and only that pod's.
func TestInLifeForgetPod(t *testing.T) {
	l := newInLife()
	l.observe("a", "k1", "v1")
	l.observe("a", "k2", "v2")
	l.observe("b", "k1", "y")
	l.forgetPod("a")
	l.forgetPod("unknown")
	want := map[core.InLifeKey]string{key("b", "k1"): "y"}
	if diff := cmp.Diff(want, l.forPods(map[types.UID]bool{"a": true, "b": true})); diff != "" {
		t.Errorf("after forgetPod (-want +got):\n%s", diff)
	}
}
