package v1beta2_test

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	openyurtv1alpha1 "github.com/drover-dev/drover/api/openyurt/apps/v1alpha1"
	openyurtv1beta1 "github.com/drover-dev/drover/api/openyurt/apps/v1beta1"
	openyurtv1beta2 "github.com/drover-dev/drover/api/openyurt/apps/v1beta2"
)

const dataKey = openyurtv1beta2.AnnotationConversionData

var hubType = metav1.TypeMeta{APIVersion: openyurtv1beta2.GroupVersion.String(), Kind: "NodePool"}

// withDefaults is spec with the election defaults.
func withDefaults(spec openyurtv1beta2.NodePoolSpec) openyurtv1beta2.NodePoolSpec {
	p := &openyurtv1beta2.NodePool{Spec: spec}
	p.SetElectionSpec(openyurtv1beta2.DefaultElectionSpec())
	return p.Spec
}

// A pool of an earlier version without the annotation is a pool with the election defaults; one with the
// defaults reads back without the annotation.
func TestConversionDefaults(t *testing.T) {
	beta := &openyurtv1beta1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "p"},
		Spec: openyurtv1beta1.NodePoolSpec{Type: openyurtv1beta1.Edge, Labels: map[string]string{"a": "b"}}}
	hub := toHub(t, beta)
	if diff := cmp.Diff(openyurtv1beta2.DefaultElectionSpec(), hub.ElectionSpec()); diff != "" {
		t.Errorf("election spec of a v1beta1 pool (-want +got):\n%s", diff)
	}
	if hub.Annotations != nil || hub.Spec.Type != openyurtv1beta2.Edge || hub.Spec.Labels["a"] != "b" {
		t.Errorf("hub %+v", hub)
	}
	for version := range spokes {
		if got := fromHub(t, version, hub).(metav1.Object).GetAnnotations(); got != nil {
			t.Errorf("%s of a pool with the defaults has annotations %v", version, got)
		}
	}
}

// What v1beta1 cannot hold is in the annotation, under v1beta2's field names.
func TestConversionCarriesElection(t *testing.T) {
	elected := metav1.Date(2026, 1, 2, 3, 4, 5, 0, metav1.Now().Location())
	hub := &openyurtv1beta2.NodePool{TypeMeta: hubType, ObjectMeta: metav1.ObjectMeta{Name: "p"}, Spec: openyurtv1beta2.NodePoolSpec{
		Type: openyurtv1beta2.Edge, InterConnectivity: true, LeaderElectionStrategy: "mark", EnableLeaderElection: true,
		LeaderNodeLabelSelector: map[string]string{"lead": "yes"}, LeaderReplicas: 2},
		Status: openyurtv1beta2.NodePoolStatus{ReadyNodeNum: 3, LeaderNum: 1, LeaderLastElectedTime: elected,
			LeaderEndpoints: []openyurtv1beta2.Leader{{NodeName: "n1", Address: "10.0.0.1"}}}}
	beta := fromHub(t, "v1beta1", hub).(*openyurtv1beta1.NodePool)
	var data map[string]map[string]any
	if err := json.Unmarshal([]byte(beta.Annotations[dataKey]), &data); err != nil {
		t.Fatalf("annotation %q: %v", beta.Annotations[dataKey], err)
	}
	if data["spec"]["leaderElectionStrategy"] != "mark" || data["spec"]["leaderReplicas"] != float64(2) ||
		data["spec"]["poolScopeMetadata"] != nil || data["status"]["leaderNum"] != float64(1) ||
		data["status"]["leaderLastElectedTime"] != "2026-01-02T03:04:05Z" || beta.Status.ReadyNodeNum != 3 {
		t.Errorf("v1beta1 %+v with data %v", beta, data)
	}
	semanticDiff(t, "hub → v1beta1 → hub", hub, toHub(t, beta))

	// A client of v1beta1 edits what it sees; the election fields stay.
	beta.Spec.Labels = map[string]string{"edited": "yes"}
	back := toHub(t, beta)
	if back.Spec.Labels["edited"] != "yes" || back.Spec.LeaderReplicas != 2 || back.Status.LeaderNum != 1 {
		t.Errorf("edited in v1beta1: %+v", back)
	}
}

// An annotation that does not decode is dropped, and the pool gets the defaults.
func TestConversionIgnoresBadData(t *testing.T) {
	beta := &openyurtv1beta1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "p",
		Annotations: map[string]string{dataKey: "{not json", "keep": "me"}}}
	hub := toHub(t, beta)
	if _, ok := hub.Annotations[dataKey]; ok || hub.Annotations["keep"] != "me" || hub.Spec.LeaderReplicas != 1 {
		t.Errorf("hub %+v", hub.Annotations)
	}
}

// hostNetwork: v1beta1 keeps spec.hostNetwork and also reads OpenYurt's annotation; v1alpha1 is the
// annotation.
func TestConversionHostNetwork(t *testing.T) {
	annotated := map[string]string{openyurtv1beta2.LabelNodePoolHostNetwork: "True"}
	for name, tc := range map[string]struct {
		spoke spoke
		want  bool
	}{
		"v1beta1 spec":               {&openyurtv1beta1.NodePool{Spec: openyurtv1beta1.NodePoolSpec{HostNetwork: true}}, true},
		"v1beta1 OpenYurt annotated": {&openyurtv1beta1.NodePool{ObjectMeta: metav1.ObjectMeta{Annotations: annotated}}, true},
		"v1beta1 neither":            {&openyurtv1beta1.NodePool{}, false},
		"v1alpha1 annotated":         {&openyurtv1alpha1.NodePool{ObjectMeta: metav1.ObjectMeta{Annotations: annotated}}, true},
		"v1alpha1 not annotated":     {&openyurtv1alpha1.NodePool{}, false},
	} {
		if got := toHub(t, tc.spoke).Spec.HostNetwork; got != tc.want {
			t.Errorf("%s: hub hostNetwork %t, want %t", name, got, tc.want)
		}
	}

	hub := &openyurtv1beta2.NodePool{TypeMeta: hubType, Spec: withDefaults(openyurtv1beta2.NodePoolSpec{HostNetwork: true})}
	alpha := fromHub(t, "v1alpha1", hub).(*openyurtv1alpha1.NodePool)
	if alpha.Annotations[openyurtv1beta2.LabelNodePoolHostNetwork] != "true" {
		t.Errorf("v1alpha1 of a hostNetwork pool: annotations %v", alpha.Annotations)
	}
	if back := toHub(t, alpha); back.Annotations != nil || !back.Spec.HostNetwork {
		t.Errorf("back from v1alpha1: %+v, %t", back.Annotations, back.Spec.HostNetwork)
	}
	if beta := fromHub(t, "v1beta1", hub).(*openyurtv1beta1.NodePool); !beta.Spec.HostNetwork || beta.Annotations != nil {
		t.Errorf("v1beta1 of a hostNetwork pool: %+v", beta)
	}

	// A pool annotated but not hostNetwork (possible only in v1beta2) stays so through both spokes.
	odd := &openyurtv1beta2.NodePool{TypeMeta: hubType, ObjectMeta: metav1.ObjectMeta{Annotations: annotated},
		Spec: withDefaults(openyurtv1beta2.NodePoolSpec{})}
	for version := range spokes {
		if back := toHub(t, fromHub(t, version, odd)); back.Spec.HostNetwork || !equality.Semantic.DeepEqual(odd, back) {
			t.Errorf("%s: %+v", version, back)
		}
	}
}

// v1alpha1's selector is kept by the later versions, in the annotation.
func TestConversionSelector(t *testing.T) {
	alpha := &openyurtv1alpha1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Spec: openyurtv1alpha1.NodePoolSpec{
		Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"zone": "a"}}}}
	hub := toHub(t, alpha)
	if hub.Annotations[dataKey] != `{"selector":{"matchLabels":{"zone":"a"}}}` {
		t.Errorf("hub annotations %v", hub.Annotations)
	}
	beta := fromHub(t, "v1beta1", hub)
	back := fromHub(t, "v1alpha1", toHub(t, beta)).(*openyurtv1alpha1.NodePool)
	if back.Spec.Selector == nil || back.Spec.Selector.MatchLabels["zone"] != "a" || back.Annotations != nil {
		t.Errorf("v1alpha1 → v1beta1 → v1alpha1: %+v", back)
	}
}
