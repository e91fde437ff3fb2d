package inject

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kruisev1beta1 "github.com/drover-dev/drover/api/kruise/apps/v1beta1"
)

const (
	zoneKey = "topology.kubernetes.io/zone"
	hostKey = corev1.LabelHostname
	rackKey = "example.com/rack"
	ipKey   = "example.com/ip"
)

// basePPS returns a PPS with a required zone+hostname term, one preferred zone term of weight 50, the ip
// annotation persisted, and an entry for web-0 on node-a in zone-a.
func basePPS(mods ...func(*kruisev1beta1.PersistentPodState)) *kruisev1beta1.PersistentPodState {
	pps := &kruisev1beta1.PersistentPodState{
		ObjectMeta: metav1.ObjectMeta{Name: "web-pps", Namespace: "ns"},
		Spec: kruisev1beta1.PersistentPodStateSpec{
			TargetRef:                  kruisev1beta1.TargetReference{APIVersion: "apps/v1", Kind: "StatefulSet", Name: "web"},
			RequiredPersistentTopology: &kruisev1beta1.NodeTopologyTerm{Keys: []string{zoneKey, hostKey}},
			PreferredPersistentTopology: []kruisev1beta1.PreferredTopologyTerm{
				{Weight: 50, Preference: kruisev1beta1.NodeTopologyTerm{Keys: []string{zoneKey}}},
			},
			PersistentPodAnnotations: []kruisev1beta1.PersistentPodAnnotation{{Key: ipKey}},
		},
		Status: kruisev1beta1.PersistentPodStateStatus{PodStates: map[string]kruisev1beta1.PodState{
			"web-0": {
				NodeName:           "node-a",
				NodeTopologyLabels: map[string]string{zoneKey: "zone-a", hostKey: "node-a"},
				Annotations:        map[string]string{ipKey: "10.0.0.7"},
			},
		}},
	}
	for _, m := range mods {
		m(pps)
	}
	return pps
}

func basePod(mods ...func(*corev1.Pod)) *corev1.Pod {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-0", Namespace: "ns"}}
	for _, m := range mods {
		m(pod)
	}
	return pod
}

// steered returns basePod with the modifications and the injected annotation.
func steered(mods ...func(*corev1.Pod)) *corev1.Pod {
	pod := basePod(mods...)
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	pod.Annotations[kruisev1beta1.AnnotationInjectedPersistentPodState] = "web-pps"
	return pod
}

func withNodeSelector(m map[string]string) func(*corev1.Pod) {
	return func(p *corev1.Pod) { p.Spec.NodeSelector = m }
}

func withPreferred(terms ...corev1.PreferredSchedulingTerm) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		if p.Spec.Affinity == nil {
			p.Spec.Affinity = &corev1.Affinity{}
		}
		if p.Spec.Affinity.NodeAffinity == nil {
			p.Spec.Affinity.NodeAffinity = &corev1.NodeAffinity{}
		}
		na := p.Spec.Affinity.NodeAffinity
		na.PreferredDuringSchedulingIgnoredDuringExecution = append(na.PreferredDuringSchedulingIgnoredDuringExecution, terms...)
	}
}

func withAnnotations(m map[string]string) func(*corev1.Pod) {
	return func(p *corev1.Pod) { p.Annotations = m }
}

func term(weight int32, kv ...string) corev1.PreferredSchedulingTerm {
	var exprs []corev1.NodeSelectorRequirement
	for i := 0; i < len(kv); i += 2 {
		exprs = append(exprs, corev1.NodeSelectorRequirement{Key: kv[i], Operator: corev1.NodeSelectorOpIn, Values: []string{kv[i+1]}})
	}
	return corev1.PreferredSchedulingTerm{Weight: weight, Preference: corev1.NodeSelectorTerm{MatchExpressions: exprs}}
}

var (
	recordedSelector = map[string]string{zoneKey: "zone-a", hostKey: "node-a"}
	zoneTerm         = term(50, zoneKey, "zone-a")
	requiredAffinity = &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
		MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "gpu", Operator: corev1.NodeSelectorOpExists}},
	}}}
)

// nodeGone confirms every node gone.
func nodeGone(string) bool { return true }

func TestPod(t *testing.T) {
	tests := map[string]struct {
		pps     *kruisev1beta1.PersistentPodState
		pod     *corev1.Pod
		opts    Options
		want    *corev1.Pod
		wantRes Result
	}{
		"required keys merged into nodeSelector, preferred term added, annotation set": {
			pps:     basePPS(),
			pod:     basePod(withNodeSelector(map[string]string{"disk": "ssd"})),
			want:    steered(withNodeSelector(map[string]string{"disk": "ssd", zoneKey: "zone-a", hostKey: "node-a"}), withPreferred(zoneTerm)),
			wantRes: Result{Mutated: true},
		},
		"existing required node affinity untouched, preferred appended after existing terms": {
			pps: basePPS(),
			pod: basePod(withPreferred(term(10, "disk", "ssd")), func(p *corev1.Pod) {
				p.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution = requiredAffinity.DeepCopy()
			}),
			want: steered(withNodeSelector(recordedSelector), withPreferred(term(10, "disk", "ssd"), zoneTerm), func(p *corev1.Pod) {
				p.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution = requiredAffinity.DeepCopy()
			}),
			wantRes: Result{Mutated: true},
		},
		"no entry for the pod: unchanged": {
			pps:     basePPS(),
			pod:     basePod(func(p *corev1.Pod) { p.Name = "web-1" }),
			want:    basePod(func(p *corev1.Pod) { p.Name = "web-1" }),
			wantRes: Result{NoState: true},
		},
		"entry without labels or annotations: unchanged": {
			pps: basePPS(func(p *kruisev1beta1.PersistentPodState) {
				p.Status.PodStates["web-0"] = kruisev1beta1.PodState{NodeName: "node-a"}
			}),
			pod:  basePod(),
			want: basePod(),
		},
		"conflicting nodeSelector keeps the pod's value": {
			pps:     basePPS(),
			pod:     basePod(withNodeSelector(map[string]string{zoneKey: "zone-b"})),
			want:    steered(withNodeSelector(map[string]string{zoneKey: "zone-b", hostKey: "node-a"}), withPreferred(zoneTerm)),
			wantRes: Result{Mutated: true, Conflicts: []string{zoneKey}},
		},
		"only conflicts: not marked injected": {
			pps: basePPS(func(p *kruisev1beta1.PersistentPodState) {
				p.Spec.RequiredPersistentTopology.Keys = []string{zoneKey}
				p.Spec.PreferredPersistentTopology = nil
			}),
			pod:     basePod(withNodeSelector(map[string]string{zoneKey: "zone-b"})),
			want:    basePod(withNodeSelector(map[string]string{zoneKey: "zone-b"})),
			wantRes: Result{Conflicts: []string{zoneKey}},
		},
		"nodeSelector already equal to the recorded values: marked injected": {
			pps:     basePPS(func(p *kruisev1beta1.PersistentPodState) { p.Spec.PreferredPersistentTopology = nil }),
			pod:     basePod(withNodeSelector(map[string]string{zoneKey: "zone-a", hostKey: "node-a"})),
			want:    steered(withNodeSelector(recordedSelector)),
			wantRes: Result{Mutated: true},
		},
		"weight clamped to 1..100, empty term skipped, term keys in order": {
			pps: basePPS(func(p *kruisev1beta1.PersistentPodState) {
				p.Spec.RequiredPersistentTopology = nil
				p.Spec.PreferredPersistentTopology = []kruisev1beta1.PreferredTopologyTerm{
					{Weight: 500, Preference: kruisev1beta1.NodeTopologyTerm{Keys: []string{hostKey, zoneKey}}},
					{Weight: 30, Preference: kruisev1beta1.NodeTopologyTerm{Keys: []string{rackKey}}},
					{Weight: 0, Preference: kruisev1beta1.NodeTopologyTerm{Keys: []string{rackKey, zoneKey}}},
				}
			}),
			pod:     basePod(),
			want:    steered(withPreferred(term(100, hostKey, "node-a", zoneKey, "zone-a"), term(1, zoneKey, "zone-a"))),
			wantRes: Result{Mutated: true},
		},
		"an identical preferred term is not added twice": {
			pps:     basePPS(func(p *kruisev1beta1.PersistentPodState) { p.Spec.RequiredPersistentTopology = nil }),
			pod:     basePod(withPreferred(zoneTerm)),
			want:    steered(withPreferred(zoneTerm)),
			wantRes: Result{Mutated: true},
		},
		"restore on: recorded annotation set, the creator's value wins": {
			pps: basePPS(func(p *kruisev1beta1.PersistentPodState) {
				p.Annotations = map[string]string{kruisev1beta1.AnnotationRestorePersistentPodAnnotations: "true"}
				p.Spec.RequiredPersistentTopology, p.Spec.PreferredPersistentTopology = nil, nil
				p.Spec.PersistentPodAnnotations = append(p.Spec.PersistentPodAnnotations,
					kruisev1beta1.PersistentPodAnnotation{Key: "mine"}, kruisev1beta1.PersistentPodAnnotation{Key: "unrecorded"})
				p.Status.PodStates["web-0"].Annotations["mine"] = "recorded"
				p.Status.PodStates["web-0"].Annotations["dropped-from-spec"] = "x"
			}),
			pod:     basePod(withAnnotations(map[string]string{"mine": "explicit"})),
			want:    steered(withAnnotations(map[string]string{"mine": "explicit", ipKey: "10.0.0.7"})),
			wantRes: Result{Mutated: true, Restored: []string{ipKey}},
		},
		"restore off: annotations not restored": {
			pps: basePPS(func(p *kruisev1beta1.PersistentPodState) {
				p.Annotations = map[string]string{kruisev1beta1.AnnotationRestorePersistentPodAnnotations: "yes"}
				p.Spec.RequiredPersistentTopology, p.Spec.PreferredPersistentTopology = nil, nil
			}),
			pod:  basePod(),
			want: basePod(),
		},
		"missing node confirmed: hostname dropped, zone kept": {
			pps:     basePPS(),
			pod:     basePod(),
			opts:    Options{NodeGone: nodeGone},
			want:    steered(withNodeSelector(map[string]string{zoneKey: "zone-a"}), withPreferred(zoneTerm)),
			wantRes: Result{Mutated: true, Dropped: []string{hostKey}},
		},
		"missing node not confirmed (present, NotReady, cordoned, API error, timeout): key kept": {
			pps:     basePPS(),
			pod:     basePod(),
			opts:    Options{NodeGone: func(string) bool { return false }},
			want:    steered(withNodeSelector(recordedSelector), withPreferred(zoneTerm)),
			wantRes: Result{Mutated: true},
		},
		"empty nodeName: key kept": {
			pps: basePPS(func(p *kruisev1beta1.PersistentPodState) {
				e := p.Status.PodStates["web-0"]
				e.NodeName = ""
				p.Status.PodStates["web-0"] = e
			}),
			pod:     basePod(),
			opts:    Options{NodeGone: nodeGone},
			want:    steered(withNodeSelector(recordedSelector), withPreferred(zoneTerm)),
			wantRes: Result{Mutated: true},
		},
		"custom identity keys: the rack is dropped, the default hostname kept": {
			pps: basePPS(func(p *kruisev1beta1.PersistentPodState) {
				p.Spec.RequiredPersistentTopology.Keys = []string{hostKey, rackKey}
				p.Spec.PreferredPersistentTopology = nil
				p.Status.PodStates["web-0"].NodeTopologyLabels[rackKey] = "r1"
			}),
			pod:     basePod(),
			opts:    Options{IdentityKeys: []string{rackKey}, NodeGone: nodeGone},
			want:    steered(withNodeSelector(map[string]string{hostKey: "node-a"})),
			wantRes: Result{Mutated: true, Dropped: []string{rackKey}},
		},
		"only a dropped key: nothing injected": {
			pps: basePPS(func(p *kruisev1beta1.PersistentPodState) {
				p.Spec.RequiredPersistentTopology.Keys = []string{hostKey}
				p.Spec.PreferredPersistentTopology = nil
			}),
			pod:     basePod(),
			opts:    Options{NodeGone: nodeGone},
			want:    basePod(),
			wantRes: Result{Dropped: []string{hostKey}},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			res := Pod(tc.pod, tc.pps, tc.opts)
			if diff := cmp.Diff(tc.want, tc.pod); diff != "" {
				t.Errorf("pod (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantRes, res); diff != "" {
				t.Errorf("result (-want +got):\n%s", diff)
			}
		})
	}
}

func TestPodIsIdempotent(t *testing.T) {
	pps := basePPS(func(p *kruisev1beta1.PersistentPodState) {
		p.Annotations = map[string]string{kruisev1beta1.AnnotationRestorePersistentPodAnnotations: "true"}
	})
	pod := basePod()
	if res := Pod(pod, pps, Options{}); !res.Mutated {
		t.Fatalf("first pass: %+v, want Mutated", res)
	}
	once := pod.DeepCopy()
	res := Pod(pod, pps, Options{})
	if diff := cmp.Diff(Result{}, res); diff != "" {
		t.Errorf("second pass result (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(once, pod); diff != "" {
		t.Errorf("second pass changed the pod (-first +second):\n%s", diff)
	}
}

func TestPodAsksNodeGoneOnlyWhenNeeded(t *testing.T) {
	tests := map[string]struct {
		keys      []string
		nodeName  string
		selector  map[string]string
		wantAsked []string
	}{
		"two identity keys: asked once":              {keys: []string{hostKey, rackKey}, nodeName: "node-a", wantAsked: []string{"node-a"}},
		"no identity key: not asked":                 {keys: []string{zoneKey}, nodeName: "node-a"},
		"empty nodeName: not asked":                  {keys: []string{hostKey}},
		"key already in the nodeSelector: not asked": {keys: []string{hostKey}, nodeName: "node-a", selector: map[string]string{hostKey: "x"}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			pps := basePPS(func(p *kruisev1beta1.PersistentPodState) {
				p.Spec.RequiredPersistentTopology.Keys = tc.keys
				p.Status.PodStates["web-0"] = kruisev1beta1.PodState{NodeName: tc.nodeName,
					NodeTopologyLabels: map[string]string{hostKey: "node-a", rackKey: "r1", zoneKey: "zone-a"}}
			})
			var asked []string
			opts := Options{IdentityKeys: []string{hostKey, rackKey}, NodeGone: func(n string) bool {
				asked = append(asked, n)
				return false
			}}
			Pod(basePod(withNodeSelector(tc.selector)), pps, opts)
			if diff := cmp.Diff(tc.wantAsked, asked); diff != "" {
				t.Errorf("NodeGone calls (-want +got):\n%s", diff)
			}
		})
	}
}
