package core

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	kruisev1beta1 "github.com/drover-dev/drover/api/kruise/apps/v1beta1"
)

const (
	zoneKey = "topology.kubernetes.io/zone"
	hostKey = "kubernetes.io/hostname"
	rackKey = "example.com/rack"
	ipKey   = "example.com/ip"
	macKey  = "example.com/mac"
	testNS  = "default"
)

var mt0 = metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))

// State is a short name for a record.
type State = kruisev1beta1.PodState

// States is a short name for status.podStates.
type States = map[string]kruisev1beta1.PodState

// pairs returns a map from key, value pairs; nil when there are none (records never hold empty maps).
func pairs(kv ...string) map[string]string {
	if len(kv) == 0 {
		return nil
	}
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return m
}

// st returns a record on node with the given topology label pairs.
func st(node string, labels ...string) State {
	return State{NodeName: node, NodeTopologyLabels: pairs(labels...)}
}

// withAnnos returns e with the given annotation pairs.
func withAnnos(e State, kv ...string) State {
	e.Annotations = pairs(kv...)
	return e
}

// ppsOpt modifies a test PersistentPodState.
type ppsOpt func(*kruisev1beta1.PersistentPodState)

// newPPS returns a PersistentPodState of the web StatefulSet requiring zoneKey and preferring hostKey.
func newPPS(opts ...ppsOpt) *kruisev1beta1.PersistentPodState {
	pps := &kruisev1beta1.PersistentPodState{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: testNS, UID: "pps-uid", Generation: 3,
			ResourceVersion: "12345", CreationTimestamp: mt0},
		Spec: kruisev1beta1.PersistentPodStateSpec{
			TargetRef:                  kruisev1beta1.TargetReference{APIVersion: "apps/v1", Kind: "StatefulSet", Name: "web"},
			RequiredPersistentTopology: &kruisev1beta1.NodeTopologyTerm{Keys: []string{zoneKey}},
			PreferredPersistentTopology: []kruisev1beta1.PreferredTopologyTerm{
				{Weight: 100, Preference: kruisev1beta1.NodeTopologyTerm{Keys: []string{hostKey}}},
			},
		},
		Status: kruisev1beta1.PersistentPodStateStatus{ObservedGeneration: 3},
	}
	for _, o := range opts {
		o(pps)
	}
	return pps
}

func withStates(s States) ppsOpt {
	return func(p *kruisev1beta1.PersistentPodState) { p.Status.PodStates = s }
}

func withPolicy(policy kruisev1beta1.PersistentPodStateRetentionPolicyType) ppsOpt {
	return func(p *kruisev1beta1.PersistentPodState) { p.Spec.PersistentPodStateRetentionPolicy = policy }
}

// withRequired replaces the required keys (none: no required term).
func withRequired(keys ...string) ppsOpt {
	return func(p *kruisev1beta1.PersistentPodState) {
		p.Spec.RequiredPersistentTopology = nil
		if len(keys) > 0 {
			p.Spec.RequiredPersistentTopology = &kruisev1beta1.NodeTopologyTerm{Keys: keys}
		}
	}
}

// withPreferred replaces the preferred terms by one term per key list.
func withPreferred(terms ...[]string) ppsOpt {
	return func(p *kruisev1beta1.PersistentPodState) {
		p.Spec.PreferredPersistentTopology = nil
		for _, keys := range terms {
			p.Spec.PreferredPersistentTopology = append(p.Spec.PreferredPersistentTopology,
				kruisev1beta1.PreferredTopologyTerm{Weight: 50, Preference: kruisev1beta1.NodeTopologyTerm{Keys: keys}})
		}
	}
}

func withAnnotationKeys(keys ...string) ppsOpt {
	return func(p *kruisev1beta1.PersistentPodState) {
		p.Spec.PersistentPodAnnotations = nil
		for _, k := range keys {
			p.Spec.PersistentPodAnnotations = append(p.Spec.PersistentPodAnnotations, kruisev1beta1.PersistentPodAnnotation{Key: k})
		}
	}
}

// podOpt modifies a test pod.
type podOpt func(*corev1.Pod)

// readyPod returns a Running, Ready pod on node (no node: unscheduled), with UID "<name>-uid".
func readyPod(name, node string, opts ...podOpt) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: testNS, UID: types.UID(name + "-uid")},
		Spec:       corev1.PodSpec{NodeName: node},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{
			{Type: corev1.PodScheduled, Status: corev1.ConditionTrue},
			{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: mt0},
		}},
	}
	for _, o := range opts {
		o(p)
	}
	return p
}

func notReady(p *corev1.Pod) { p.Status.Conditions[1].Status = corev1.ConditionFalse }

func noConditions(p *corev1.Pod) { p.Status.Conditions = nil }

func terminating(p *corev1.Pod) { p.DeletionTimestamp = &mt0 }

func phase(ph corev1.PodPhase) podOpt { return func(p *corev1.Pod) { p.Status.Phase = ph } }

func uid(u types.UID) podOpt { return func(p *corev1.Pod) { p.UID = u } }

func annos(kv ...string) podOpt { return func(p *corev1.Pod) { p.Annotations = pairs(kv...) } }

// testNodes are the nodes of the cluster: n1 and n2 in zone a, n3 in zone b, bare without topology labels,
// nozone with a hostname only.
var testNodes = map[string]map[string]string{
	"n1":     {zoneKey: "a", hostKey: "n1", rackKey: "r1", "other": "x"},
	"n2":     {zoneKey: "a", hostKey: "n2", rackKey: "r2"},
	"n3":     {zoneKey: "b", hostKey: "n3", rackKey: "r3"},
	"bare":   {"other": "y"},
	"nozone": {hostKey: "nozone"},
}

// lookupIn returns a Pass.Node over nodes, counting its calls per node name in calls (when not nil).
func lookupIn(nodes map[string]map[string]string, calls map[string]int) func(string) (map[string]string, bool) {
	return func(name string) (map[string]string, bool) {
		if calls != nil {
			calls[name]++
		}
		l, ok := nodes[name]
		return l, ok
	}
}

// Targets of the three built-in kinds.

// nativeTarget is a StatefulSet with replicas from ordinal start.
func nativeTarget(replicas, start int32) *Target {
	return &Target{UID: "sts-uid", Replicas: replicas, Ordinals: NewOrdinals(replicas, start, nil)}
}

// kruiseTarget is an Advanced StatefulSet with reserved ordinals.
func kruiseTarget(replicas, start int32, reserved ...int) *Target {
	return &Target{UID: "asts-uid", Replicas: replicas, Ordinals: NewOrdinals(replicas, start, reserved)}
}

// tappTarget is a TApp: ordinals from 0, nothing reserved (killed instances keep their ids).
func tappTarget(replicas int32) *Target {
	return &Target{UID: "tapp-uid", Replicas: replicas, Ordinals: NewOrdinals(replicas, 0, nil)}
}

// compute runs Compute over pps, target and pods with testNodes and no in-life changes.
func compute(pps *kruisev1beta1.PersistentPodState, target *Target, pods ...*corev1.Pod) Result {
	return Compute(Pass{PPS: pps, Target: target, Pods: pods, Node: lookupIn(testNodes, nil)})
}
