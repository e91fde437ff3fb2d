package v1alpha1_test

import (
	"encoding/json"
	"os"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	kruisev1alpha1 "github.com/drover-dev/drover/api/kruise/apps/v1alpha1"
)

const manifestFile = "testdata/openkruise-persistentpodstate.yaml"

// TestOpenKruiseManifestRoundTrips: an OpenKruise manifest decodes strictly (every field it uses is known, with
// its type) and encodes back to the same document, so nothing is lost or renamed on the way through drover.
func TestOpenKruiseManifestRoundTrips(t *testing.T) {
	data, err := os.ReadFile(manifestFile)
	if err != nil {
		t.Fatal(err)
	}
	pps := &kruisev1alpha1.PersistentPodState{}
	if err := yaml.UnmarshalStrict(data, pps); err != nil {
		t.Fatalf("strict decode: %v", err)
	}
	want := kruisev1alpha1.PersistentPodStateSpec{
		TargetRef:                  kruisev1alpha1.TargetReference{APIVersion: "apps.kruise.io/v1beta1", Kind: "StatefulSet", Name: "echoserver"},
		RequiredPersistentTopology: &kruisev1alpha1.NodeTopologyTerm{NodeTopologyKeys: []string{"kubernetes.io/hostname"}},
		PreferredPersistentTopology: []kruisev1alpha1.PreferredTopologyTerm{{
			Weight:     100,
			Preference: kruisev1alpha1.NodeTopologyTerm{NodeTopologyKeys: []string{"topology.kubernetes.io/zone", "topology.kubernetes.io/region"}},
		}},
		PersistentPodStateRetentionPolicy: kruisev1alpha1.RetainWhenDeleted,
		PersistentPodAnnotations:          []kruisev1alpha1.PersistentPodAnnotation{{Key: "cni.projectcalico.org/podIP"}},
	}
	if diff := cmp.Diff(want, pps.Spec); diff != "" {
		t.Errorf("spec (-want +got):\n%s", diff)
	}
	if got := pps.Status.PodStates["echoserver-0"].Annotations["cni.projectcalico.org/podIP"]; got != "10.244.1.12" {
		t.Errorf("recorded podIP = %q", got)
	}

	encoded, err := json.Marshal(pps)
	if err != nil {
		t.Fatal(err)
	}
	var gotDoc, wantDoc map[string]any
	if err := json.Unmarshal(encoded, &gotDoc); err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(data, &wantDoc); err != nil {
		t.Fatal(err)
	}
	// metadata.creationTimestamp is written as null by ObjectMeta; the rest must match exactly.
	delete(gotDoc["metadata"].(map[string]any), "creationTimestamp")
	if diff := cmp.Diff(wantDoc, gotDoc); diff != "" {
		t.Errorf("round trip (-manifest +encoded):\n%s", diff)
	}
}

// TestHealthyStatusEncoding: a status without records or problems encodes as OpenKruise's does: the
// observedGeneration always, no podStates, no conditions, and no empty maps inside a record.
func TestHealthyStatusEncoding(t *testing.T) {
	tests := []struct {
		status kruisev1alpha1.PersistentPodStateStatus
		want   string
	}{
		{kruisev1alpha1.PersistentPodStateStatus{}, `{"observedGeneration":0}`},
		{kruisev1alpha1.PersistentPodStateStatus{ObservedGeneration: 3, PodStates: map[string]kruisev1alpha1.PodState{}, Conditions: []metav1.Condition{}},
			`{"observedGeneration":3}`},
		{kruisev1alpha1.PersistentPodStateStatus{ObservedGeneration: 2, PodStates: map[string]kruisev1alpha1.PodState{
			"web-0": {NodeName: "n1", NodeTopologyLabels: map[string]string{}, Annotations: map[string]string{}},
		}}, `{"observedGeneration":2,"podStates":{"web-0":{"nodeName":"n1"}}}`},
	}
	for _, tt := range tests {
		got, err := json.Marshal(tt.status)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != tt.want {
			t.Errorf("encoded %s, want %s", got, tt.want)
		}
	}
}
