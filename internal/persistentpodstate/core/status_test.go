package core

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
)

// TestComputeDoesNotModifyInputs: the object and the pods come from a shared cache. Every kind of change
// (pruning, recording again, annotation updates, removal) is made on copies.
func TestComputeDoesNotModifyInputs(t *testing.T) {
	pps := newPPS(withAnnotationKeys(ipKey, macKey), withPreferred([]string{rackKey}), withStates(States{
		"web-0": withAnnos(st("n1", zoneKey, "a", hostKey, "n1"), ipKey, "1", "gone", "g"), // keys pruned and added
		"web-1": withAnnos(st("n1", zoneKey, "a", rackKey, "r1"), ipKey, "1"),              // moved to n3
		"web-2": withAnnos(st("n2", zoneKey, "a", hostKey, "n2"), ipKey, "1"),              // in-life change
		"web-3": {NodeName: "n2", NodeTopologyLabels: map[string]string{}},                 // empty map normalised
		"web-9": st("n1", zoneHost...),                                                     // removed
	}))
	pods := []*corev1.Pod{
		readyPod("web-0", "n1", annos(ipKey, "1", macKey, "m")),
		readyPod("web-1", "n3", annos(ipKey, "5")),
		readyPod("web-2", "n2", annos(ipKey, "2")),
	}
	nodes := map[string]map[string]string{"n1": {zoneKey: "a", hostKey: "n1", rackKey: "r1"}, "n2": {rackKey: "r2"}, "n3": {zoneKey: "b"}}
	inLife := map[InLifeKey]string{{UID: "web-2-uid", Key: ipKey}: "2"}
	ppsBefore, nodesBefore, inLifeBefore := pps.DeepCopy(), clone2(nodes), map[InLifeKey]string{{UID: "web-2-uid", Key: ipKey}: "2"}
	var podsBefore []*corev1.Pod
	for _, p := range pods {
		podsBefore = append(podsBefore, p.DeepCopy())
	}

	got := Compute(Pass{PPS: pps, Target: nativeTarget(4, 0), Pods: pods, Node: lookupIn(nodes, nil), InLife: inLife})

	want := States{
		"web-0": withAnnos(st("n1", zoneKey, "a", rackKey, "r1"), ipKey, "1", macKey, "m"),
		"web-1": withAnnos(st("n3", zoneKey, "b"), ipKey, "1"),
		"web-2": withAnnos(st("n2", rackKey, "r2"), ipKey, "2"),
		"web-3": {NodeName: "n2"},
	}
	if diff := cmp.Diff(want, got.PodStates); diff != "" {
		t.Errorf("podStates (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(ppsBefore, pps); diff != "" {
		t.Errorf("the object was modified (-before +after):\n%s", diff)
	}
	for i := range pods {
		if diff := cmp.Diff(podsBefore[i], pods[i]); diff != "" {
			t.Errorf("pod %s was modified (-before +after):\n%s", pods[i].Name, diff)
		}
	}
	if diff := cmp.Diff(nodesBefore, nodes); diff != "" {
		t.Errorf("node labels were modified (-before +after):\n%s", diff)
	}
	if diff := cmp.Diff(inLifeBefore, inLife); diff != "" {
		t.Errorf("in-life observations were modified (-before +after):\n%s", diff)
	}
	delete(got.PodStates, "web-0")
	if _, ok := pps.Status.PodStates["web-0"]; !ok {
		t.Error("the result's map is the object's map")
	}
}

func clone2(m map[string]map[string]string) map[string]map[string]string {
	out := map[string]map[string]string{}
	for k, v := range m {
		inner := map[string]string{}
		for k2, v2 := range v {
			inner[k2] = v2
		}
		out[k] = inner
	}
	return out
}

// TestComputeNoOp: a pass over records that already hold everything changes nothing and reports nothing,
// and unchanged records share their maps with the input (no copy per pass).
func TestComputeNoOp(t *testing.T) {
	have := States{
		"web-0": withAnnos(st("n1", zoneHost...), ipKey, "1"),
		"web-1": st("n3", zoneKey, "b", hostKey, "n3"),
		"web-2": st("n2", zoneKey, "a", hostKey, "n2"),
	}
	pps := newPPS(withAnnotationKeys(ipKey), withStates(have))
	pods := []*corev1.Pod{readyPod("web-0", "n1", annos(ipKey, "1")), readyPod("web-1", "n3"), readyPod("web-2", "n2", notReady)}
	got := compute(pps, nativeTarget(3, 0), pods...)
	if diff := cmp.Diff(Result{PodStates: have}, got); diff != "" {
		t.Errorf("result (-want +got):\n%s", diff)
	}
	for name, e := range got.PodStates {
		if !sameMap(e.NodeTopologyLabels, have[name].NodeTopologyLabels) || !sameMap(e.Annotations, have[name].Annotations) {
			t.Errorf("record %s was copied although unchanged", name)
		}
	}
}

// sameMap reports whether a and b are the same map object (both nil counts).
func sameMap(a, b map[string]string) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	a["\x00probe"] = "x"
	_, shared := b["\x00probe"]
	delete(a, "\x00probe")
	return shared
}
