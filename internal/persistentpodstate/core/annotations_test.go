package core

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// annotationCase is one pass over web-0 (a record on n1 unless noRec) with persisted keys (ipKey when nil).
type annotationCase struct {
	keys   []string
	have   map[string]string // recorded annotations
	noRec  bool
	pod    *corev1.Pod
	inLife map[InLifeKey]string
	want   map[string]string
	mism   []Mismatch
	cons   []InLifeKey
}

var annotationCases = map[string]annotationCase{
	"current absent: recorded value kept": {
		have: pairs(ipKey, "1"), pod: readyPod("web-0", "n1"), want: pairs(ipKey, "1"),
	},
	"recorded absent: current recorded": {
		have: nil, pod: readyPod("web-0", "n1", annos(ipKey, "2")), want: pairs(ipKey, "2"),
	},
	"no record yet: current recorded": {
		noRec: true, pod: readyPod("web-0", "n1", annos(ipKey, "2")), want: pairs(ipKey, "2"),
	},
	"equal: nothing to do": {
		have: pairs(ipKey, "1"), pod: readyPod("web-0", "n1", annos(ipKey, "1")), want: pairs(ipKey, "1"),
	},
	"empty current value is a value": {
		have: nil, pod: readyPod("web-0", "n1", annos(ipKey, "")), want: pairs(ipKey, ""),
	},
	"different: first value wins": {
		have: pairs(ipKey, "1"), pod: readyPod("web-0", "n1", annos(ipKey, "2")), want: pairs(ipKey, "1"),
		mism: []Mismatch{{Pod: "web-0", UID: "web-0-uid", Key: ipKey, Recorded: "1", Current: "2"}},
	},
	"in-life change of this instance followed": {
		have: pairs(ipKey, "1"), pod: readyPod("web-0", "n1", annos(ipKey, "2")),
		inLife: map[InLifeKey]string{{UID: "web-0-uid", Key: ipKey}: "2"},
		want:   pairs(ipKey, "2"), cons: []InLifeKey{{UID: "web-0-uid", Key: ipKey}},
	},
	"in-life change to another value: stale, not applied": {
		have: pairs(ipKey, "1"), pod: readyPod("web-0", "n1", annos(ipKey, "3")),
		inLife: map[InLifeKey]string{{UID: "web-0-uid", Key: ipKey}: "2"},
		want:   pairs(ipKey, "1"),
		mism:   []Mismatch{{Pod: "web-0", UID: "web-0-uid", Key: ipKey, Recorded: "1", Current: "3"}},
	},
	"recreated instance with a different UID: first value wins": {
		have: pairs(ipKey, "1"), pod: readyPod("web-0", "n1", uid("new-uid"), annos(ipKey, "2")),
		inLife: map[InLifeKey]string{{UID: "web-0-uid", Key: ipKey}: "2"},
		want:   pairs(ipKey, "1"),
		mism:   []Mismatch{{Pod: "web-0", UID: "new-uid", Key: ipKey, Recorded: "1", Current: "2"}},
	},
	"restart fallback: no observations, first value wins": {
		have: pairs(ipKey, "1"), pod: readyPod("web-0", "n1", annos(ipKey, "2")), inLife: map[InLifeKey]string{},
		want: pairs(ipKey, "1"),
		mism: []Mismatch{{Pod: "web-0", UID: "web-0-uid", Key: ipKey, Recorded: "1", Current: "2"}},
	},
	"observation of another key does not apply": {
		have: pairs(ipKey, "1"), pod: readyPod("web-0", "n1", annos(ipKey, "2")),
		inLife: map[InLifeKey]string{{UID: "web-0-uid", Key: macKey}: "2"},
		want:   pairs(ipKey, "1"),
		mism:   []Mismatch{{Pod: "web-0", UID: "web-0-uid", Key: ipKey, Recorded: "1", Current: "2"}},
	},
	"observation already held by the record is consumed": {
		have: pairs(ipKey, "2"), pod: readyPod("web-0", "n1", annos(ipKey, "2")),
		inLife: map[InLifeKey]string{{UID: "web-0-uid", Key: ipKey}: "2"},
		want:   pairs(ipKey, "2"), cons: []InLifeKey{{UID: "web-0-uid", Key: ipKey}},
	},
	"key removed from the spec dropped": {
		keys: []string{macKey}, have: pairs(ipKey, "1", macKey, "m"), pod: readyPod("web-0", "n1", annos(ipKey, "1", macKey, "m")),
		want: pairs(macKey, "m"),
	},
	"no persisted keys: annotations omitted": {
		keys: []string{}, have: pairs(ipKey, "1"), pod: readyPod("web-0", "n1", annos(ipKey, "1")), want: nil,
	},
	"keys outside the spec not recorded": {
		have: nil, pod: readyPod("web-0", "n1", annos(ipKey, "1", macKey, "m", "other", "o")), want: pairs(ipKey, "1"),
	},
	"several keys, each by its own case": {
		keys: []string{ipKey, macKey, "c"}, have: pairs(ipKey, "1", macKey, "m"),
		pod:    readyPod("web-0", "n1", annos(ipKey, "9", macKey, "n", "c", "x")),
		inLife: map[InLifeKey]string{{UID: "web-0-uid", Key: macKey}: "n"},
		want:   pairs(ipKey, "1", macKey, "n", "c", "x"),
		mism:   []Mismatch{{Pod: "web-0", UID: "web-0-uid", Key: ipKey, Recorded: "1", Current: "9"}},
		cons:   []InLifeKey{{UID: "web-0-uid", Key: macKey}},
	},
	"not-ready pod: annotations untouched": {
		have: pairs(ipKey, "1"), pod: readyPod("web-0", "n1", notReady, annos(ipKey, "2")),
		inLife: map[InLifeKey]string{{UID: "web-0-uid", Key: ipKey}: "2"},
		want:   pairs(ipKey, "1"),
	},
	"not-ready pod without record: nothing recorded": {
		noRec: true, pod: readyPod("web-0", "n1", notReady, annos(ipKey, "2")), want: nil,
	},
	"pod skipped for its node: annotations untouched": {
		have: pairs(ipKey, "1"), pod: readyPod("web-0", "gone", annos(ipKey, "2")),
		inLife: map[InLifeKey]string{{UID: "web-0-uid", Key: ipKey}: "2"},
		want:   pairs(ipKey, "1"),
	},
}

func TestAnnotationPolicy(t *testing.T) {
	for name, tc := range annotationCases {
		t.Run(name, func(t *testing.T) {
			keys := tc.keys
			if keys == nil {
				keys = []string{ipKey}
			}
			var have States
			if !tc.noRec {
				have = States{"web-0": withAnnos(st("n1", zoneHost...), flatten(tc.have)...)}
			}
			pps := newPPS(withAnnotationKeys(keys...), withStates(have))
			got := Compute(Pass{PPS: pps, Target: nativeTarget(1, 0), Pods: []*corev1.Pod{tc.pod},
				Node: lookupIn(testNodes, nil), InLife: tc.inLife})
			if diff := cmp.Diff(tc.want, got.PodStates["web-0"].Annotations); diff != "" {
				t.Errorf("annotations (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.mism, got.Mismatches); diff != "" {
				t.Errorf("mismatches (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.cons, got.Consumed); diff != "" {
				t.Errorf("consumed (-want +got):\n%s", diff)
			}
		})
	}
}

// flatten returns a map's pairs as key, value arguments.
func flatten(m map[string]string) []string {
	var kv []string
	for k, v := range m {
		kv = append(kv, k, v)
	}
	return kv
}

// TestAnnotationPolicySequence follows one identity through recreation, an in-life change, a restart and a
// reset by removing the key from the spec and adding it back.
func TestAnnotationPolicySequence(t *testing.T) {
	target := nativeTarget(1, 0)
	pass := func(have States, keys []string, pod *corev1.Pod, inLife map[InLifeKey]string) Result {
		return Compute(Pass{PPS: newPPS(withAnnotationKeys(keys...), withStates(have)), Target: target,
			Pods: []*corev1.Pod{pod}, Node: lookupIn(testNodes, nil), InLife: inLife})
	}
	ip := func(r Result) string { return r.PodStates["web-0"].Annotations[ipKey] }
	keys := []string{ipKey}

	r := pass(nil, keys, readyPod("web-0", "n1", uid("a"), annos(ipKey, "10.0.0.1")), nil)
	steps := []struct{ got, want string }{{ip(r), "10.0.0.1"}}
	// Recreated with another address: the first value wins.
	r = pass(r.PodStates, keys, readyPod("web-0", "n1", uid("b"), annos(ipKey, "10.0.0.2")), nil)
	steps = append(steps, struct{ got, want string }{ip(r), "10.0.0.1"})
	// The live instance b is re-addressed from the recorded value: followed.
	r = pass(r.PodStates, keys, readyPod("web-0", "n1", uid("b"), annos(ipKey, "10.0.0.3")),
		map[InLifeKey]string{{UID: "b", Key: ipKey}: "10.0.0.3"})
	steps = append(steps, struct{ got, want string }{ip(r), "10.0.0.3"})
	// After a restart (no observations) another recreated value is not taken.
	r = pass(r.PodStates, keys, readyPod("web-0", "n1", uid("c"), annos(ipKey, "10.0.0.4")), nil)
	steps = append(steps, struct{ got, want string }{ip(r), "10.0.0.3"})
	// Reset: the key removed from the spec drops the value; added back, the current value is recorded.
	r = pass(r.PodStates, nil, readyPod("web-0", "n1", uid("c"), annos(ipKey, "10.0.0.4")), nil)
	steps = append(steps, struct{ got, want string }{ip(r), ""})
	r = pass(r.PodStates, keys, readyPod("web-0", "n1", uid("c"), annos(ipKey, "10.0.0.4")), nil)
	steps = append(steps, struct{ got, want string }{ip(r), "10.0.0.4"})

	var got, want []string
	for _, s := range steps {
		got, want = append(got, s.got), append(want, s.want)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("recorded value per step (-want +got):\n%s", diff)
	}
}

// TestMismatchOrder: mismatches and consumed observations come sorted whatever the pod order.
func TestMismatchOrder(t *testing.T) {
	have := States{}
	var pods []*corev1.Pod
	inLife := map[InLifeKey]string{}
	for _, n := range []string{"web-2", "web-0", "web-1"} {
		have[n] = withAnnos(st("n1", zoneHost...), ipKey, "old", macKey, "old")
		pods = append(pods, readyPod(n, "n1", annos(ipKey, "new", macKey, "new")))
		inLife[InLifeKey{UID: types.UID(n + "-uid"), Key: "c"}] = "new"
	}
	pps := newPPS(withAnnotationKeys(macKey, ipKey, "c"), withStates(have))
	for _, p := range pods {
		p.Annotations["c"] = "new"
	}
	got := Compute(Pass{PPS: pps, Target: nativeTarget(3, 0), Pods: pods, Node: lookupIn(testNodes, nil), InLife: inLife})
	var order []string
	for _, m := range got.Mismatches {
		order = append(order, m.Pod+" "+m.Key)
	}
	wantOrder := []string{"web-0 " + ipKey, "web-0 " + macKey, "web-1 " + ipKey, "web-1 " + macKey, "web-2 " + ipKey, "web-2 " + macKey}
	if diff := cmp.Diff(wantOrder, order); diff != "" {
		t.Errorf("mismatch order (-want +got):\n%s", diff)
	}
	wantConsumed := []InLifeKey{{UID: "web-0-uid", Key: "c"}, {UID: "web-1-uid", Key: "c"}, {UID: "web-2-uid", Key: "c"}}
	if diff := cmp.Diff(wantConsumed, got.Consumed); diff != "" {
		t.Errorf("consumed order (-want +got):\n%s", diff)
	}
}
