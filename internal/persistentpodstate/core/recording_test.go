package core

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
)

// recordingTargets are the built-in kinds with three valid pod names each: the recording rules apply to all.
var recordingTargets = map[string]struct {
	target func() *Target
	names  [3]string
}{
	"native":                   {func() *Target { return nativeTarget(3, 0) }, [3]string{"web-0", "web-1", "web-2"}},
	"native with start":        {func() *Target { return nativeTarget(3, 5) }, [3]string{"web-5", "web-6", "web-7"}},
	"kruise with reservations": {func() *Target { return kruiseTarget(3, 0, 1, 3) }, [3]string{"web-0", "web-2", "web-4"}},
	"tapp":                     {func() *Target { return tappTarget(3) }, [3]string{"web-0", "web-1", "web-2"}},
}

// recordingCase builds the spec options, the current records and the pods from three valid names, and the
// expected records.
type recordingCase struct {
	opts  []ppsOpt
	have  func(n [3]string) States
	pods  func(n [3]string) []*corev1.Pod
	want  func(n [3]string) States
	nodes map[string]map[string]string // testNodes when nil
}

var zoneHost = []string{zoneKey, "a", hostKey, "n1"}

var recordingCases = map[string]recordingCase{
	"missing records added": {
		pods: func(n [3]string) []*corev1.Pod {
			return []*corev1.Pod{readyPod(n[0], "n1"), readyPod(n[1], "n3")}
		},
		want: func(n [3]string) States {
			return States{n[0]: st("n1", zoneHost...), n[1]: st("n3", zoneKey, "b", hostKey, "n3")}
		},
	},
	"ready without a node: no record": {
		pods: func(n [3]string) []*corev1.Pod { return []*corev1.Pod{readyPod(n[0], "")} },
		want: func(n [3]string) States { return nil },
	},
	"a node without ready: no record": {
		pods: func(n [3]string) []*corev1.Pod {
			return []*corev1.Pod{readyPod(n[0], "n1", notReady), readyPod(n[1], "n1", noConditions)}
		},
		want: func(n [3]string) States { return nil },
	},
	"terminating or finished ready pods: no record": {
		pods: func(n [3]string) []*corev1.Pod {
			return []*corev1.Pod{readyPod(n[0], "n1", terminating), readyPod(n[1], "n1", phase(corev1.PodSucceeded)),
				readyPod(n[2], "n1", phase(corev1.PodFailed))}
		},
		want: func(n [3]string) States { return nil },
	},
	"phase otherwise not checked": {
		pods: func(n [3]string) []*corev1.Pod { return []*corev1.Pod{readyPod(n[0], "n1", phase(corev1.PodUnknown))} },
		want: func(n [3]string) States { return States{n[0]: st("n1", zoneHost...)} },
	},
	"not-ready pods keep their old records": {
		have: func(n [3]string) States { return States{n[0]: st("n1", zoneHost...)} },
		pods: func(n [3]string) []*corev1.Pod { return []*corev1.Pod{readyPod(n[0], "n3", notReady)} },
		want: func(n [3]string) States { return States{n[0]: st("n1", zoneHost...)} },
	},
	"a wrong node name is recorded again": {
		have: func(n [3]string) States { return States{n[0]: st("n1", zoneHost...)} },
		pods: func(n [3]string) []*corev1.Pod { return []*corev1.Pod{readyPod(n[0], "n3")} },
		want: func(n [3]string) States { return States{n[0]: st("n3", zoneKey, "b", hostKey, "n3")} },
	},
	"same node and keys: label values not followed": {
		have: func(n [3]string) States { return States{n[0]: st("n1", zoneKey, "old", hostKey, "old")} },
		pods: func(n [3]string) []*corev1.Pod { return []*corev1.Pod{readyPod(n[0], "n1")} },
		want: func(n [3]string) States { return States{n[0]: st("n1", zoneKey, "old", hostKey, "old")} },
	},
	"a key removed from the spec shrinks the labels": {
		opts: []ppsOpt{withPreferred()},
		have: func(n [3]string) States {
			return States{n[0]: st("n1", zoneKey, "old", hostKey, "n1"), n[1]: st("n2", zoneKey, "a", hostKey, "n2")}
		},
		pods: func(n [3]string) []*corev1.Pod { return []*corev1.Pod{readyPod(n[0], "n1")} }, // n[1] has no pod
		want: func(n [3]string) States {
			return States{n[0]: st("n1", zoneKey, "old"), n[1]: st("n2", zoneKey, "a")}
		},
	},
	"a key added to the spec records the node again": {
		opts: []ppsOpt{withPreferred([]string{hostKey}, []string{rackKey})},
		have: func(n [3]string) States {
			return States{n[0]: st("n1", zoneKey, "old", hostKey, "n1"), n[1]: st("n2", zoneKey, "a", hostKey, "n2")}
		},
		pods: func(n [3]string) []*corev1.Pod { return []*corev1.Pod{readyPod(n[0], "n1")} },
		want: func(n [3]string) States {
			return States{
				n[0]: st("n1", zoneKey, "a", hostKey, "n1", rackKey, "r1"),
				n[1]: st("n2", zoneKey, "a", hostKey, "n2"), // no eligible pod: never recorded again
			}
		},
	},
	"a label the node lacks is omitted": {
		pods: func(n [3]string) []*corev1.Pod { return []*corev1.Pod{readyPod(n[0], "nozone")} },
		want: func(n [3]string) States { return States{n[0]: st("nozone", hostKey, "nozone")} },
	},
	"no empty maps": {
		have: func(n [3]string) States {
			return States{n[1]: {NodeName: "n2", NodeTopologyLabels: map[string]string{}, Annotations: map[string]string{}}}
		},
		pods: func(n [3]string) []*corev1.Pod { return []*corev1.Pod{readyPod(n[0], "bare")} },
		want: func(n [3]string) States { return States{n[0]: {NodeName: "bare"}, n[1]: {NodeName: "n2"}} },
	},
	"keys of every term, deduplicated": {
		opts: []ppsOpt{withRequired(zoneKey, hostKey), withPreferred([]string{hostKey, rackKey}, []string{zoneKey})},
		pods: func(n [3]string) []*corev1.Pod { return []*corev1.Pod{readyPod(n[0], "n2")} },
		want: func(n [3]string) States {
			return States{n[0]: st("n2", zoneKey, "a", hostKey, "n2", rackKey, "r2")}
		},
	},
	"preferred terms only": {
		opts: []ppsOpt{withRequired(), withPreferred([]string{rackKey})},
		pods: func(n [3]string) []*corev1.Pod { return []*corev1.Pod{readyPod(n[0], "n3")} },
		want: func(n [3]string) States { return States{n[0]: st("n3", rackKey, "r3")} },
	},
	"node missing a key: recorded again to the same result": {
		have: func(n [3]string) States { return States{n[0]: st("nozone", hostKey, "nozone")} },
		pods: func(n [3]string) []*corev1.Pod { return []*corev1.Pod{readyPod(n[0], "nozone")} },
		want: func(n [3]string) States { return States{n[0]: st("nozone", hostKey, "nozone")} },
	},
	"pods recorded whatever their ordinal": {
		pods: func(n [3]string) []*corev1.Pod {
			return []*corev1.Pod{readyPod("web-99", "n1"), readyPod("web", "n2"), readyPod("web-x", "n3")}
		},
		want: func(n [3]string) States {
			return States{
				"web-99": st("n1", zoneHost...),
				"web":    st("n2", zoneKey, "a", hostKey, "n2"),
				"web-x":  st("n3", zoneKey, "b", hostKey, "n3"),
			}
		},
	},
	"nil pods and nil node lookup results tolerated": {
		pods:  func(n [3]string) []*corev1.Pod { return []*corev1.Pod{nil, readyPod(n[0], "n1")} },
		nodes: map[string]map[string]string{"n1": nil},
		want:  func(n [3]string) States { return States{n[0]: {NodeName: "n1"}} },
	},
}

func TestComputeRecording(t *testing.T) {
	for targetName, tg := range recordingTargets {
		for name, tc := range recordingCases {
			t.Run(targetName+"/"+name, func(t *testing.T) {
				var have States
				if tc.have != nil {
					have = tc.have(tg.names)
				}
				nodes := tc.nodes
				if nodes == nil {
					nodes = testNodes
				}
				pps := newPPS(append(tc.opts, withStates(have))...)
				got := Compute(Pass{PPS: pps, Target: tg.target(), Pods: tc.pods(tg.names), Node: lookupIn(nodes, nil)})
				if diff := cmp.Diff(tc.want(tg.names), got.PodStates); diff != "" {
					t.Errorf("podStates (-want +got):\n%s", diff)
				}
				if len(got.Skipped)+len(got.Mismatches)+len(got.Consumed) != 0 {
					t.Errorf("unexpected skipped, mismatches or consumed: %+v", got)
				}
			})
		}
	}
}

// TestComputeNodeNotCached: a pod whose node is not in the cache is skipped this pass, its record keeps only
// the pruning of untracked keys, and the other pods are recorded.
func TestComputeNodeNotCached(t *testing.T) {
	pps := newPPS(withAnnotationKeys(ipKey), withStates(States{
		"web-0": withAnnos(st("n1", zoneKey, "a", hostKey, "n1", rackKey, "r1"), ipKey, "10.0.0.1", macKey, "m"),
	}))
	pods := []*corev1.Pod{
		readyPod("web-0", "gone", annos(ipKey, "10.0.0.9")),
		readyPod("web-1", "gone", annos(ipKey, "10.0.0.2")),
		readyPod("web-2", "n2"),
		readyPod("web-3", "also-gone"),
	}
	got := compute(pps, nativeTarget(4, 0), pods...)
	want := Result{
		PodStates: States{
			"web-0": withAnnos(st("n1", zoneKey, "a", hostKey, "n1"), ipKey, "10.0.0.1"),
			"web-2": st("n2", zoneKey, "a", hostKey, "n2"),
		},
		Skipped: []string{"web-0", "web-1", "web-3"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("result (-want +got):\n%s", diff)
	}
	nilLookup := Compute(Pass{PPS: newPPS(), Target: nativeTarget(1, 0), Pods: []*corev1.Pod{readyPod("web-0", "n1")}})
	if diff := cmp.Diff(Result{Skipped: []string{"web-0"}}, nilLookup); diff != "" {
		t.Errorf("nil Node finds no node (-want +got):\n%s", diff)
	}
}

// TestComputeNodeLookupMemoized: each node is looked up once per pass, missing ones included.
func TestComputeNodeLookupMemoized(t *testing.T) {
	calls := map[string]int{}
	pods := []*corev1.Pod{
		readyPod("web-0", "n1"), readyPod("web-1", "n1"), readyPod("web-2", "n2"),
		readyPod("web-3", "gone"), readyPod("web-4", "gone"), readyPod("web-5", "n1", notReady),
	}
	Compute(Pass{PPS: newPPS(), Target: nativeTarget(6, 0), Pods: pods, Node: lookupIn(testNodes, calls)})
	if diff := cmp.Diff(map[string]int{"n1": 1, "n2": 1, "gone": 1}, calls); diff != "" {
		t.Errorf("lookups per node (-want +got):\n%s", diff)
	}
}
