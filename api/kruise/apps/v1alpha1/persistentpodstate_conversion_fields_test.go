package v1alpha1_test

import (
	"os"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/yaml"

	kruisev1alpha1 "github.com/drover-dev/drover/api/kruise/apps/v1alpha1"
	kruisev1beta1 "github.com/drover-dev/drover/api/kruise/apps/v1beta1"
)

// TestConversionOfEachField sets one field at a time and wants it at its place in the other version, both
// ways; nil and empty lists and maps stay nil and empty.
func TestConversionOfEachField(t *testing.T) {
	t0 := metav1.Unix(1700000000, 0)
	cond := metav1.Condition{Type: kruisev1beta1.ConditionTargetUnavailable, Status: metav1.ConditionTrue,
		ObservedGeneration: 2, LastTransitionTime: t0, Reason: "KindNotServed", Message: "m"}
	tests := []struct {
		name  string
		spoke func(*kruisev1alpha1.PersistentPodState)
		hub   func(*kruisev1beta1.PersistentPodState)
	}{
		{"nothing", func(*kruisev1alpha1.PersistentPodState) {}, func(*kruisev1beta1.PersistentPodState) {}},
		{"metadata", func(p *kruisev1alpha1.PersistentPodState) {
			p.ObjectMeta = metav1.ObjectMeta{Name: "web", Namespace: "ns", UID: "u", ResourceVersion: "7", Generation: 3,
				Labels: map[string]string{"a": "b"}, Annotations: map[string]string{kruisev1alpha1.AnnotationRestorePersistentPodAnnotations: "true"}}
		}, func(p *kruisev1beta1.PersistentPodState) {
			p.ObjectMeta = metav1.ObjectMeta{Name: "web", Namespace: "ns", UID: "u", ResourceVersion: "7", Generation: 3,
				Labels: map[string]string{"a": "b"}, Annotations: map[string]string{kruisev1beta1.AnnotationRestorePersistentPodAnnotations: "true"}}
		}},
		{"targetRef", func(p *kruisev1alpha1.PersistentPodState) {
			p.Spec.TargetRef = kruisev1alpha1.TargetReference{APIVersion: "apps/v1", Kind: "StatefulSet", Name: "web"}
		}, func(p *kruisev1beta1.PersistentPodState) {
			p.Spec.TargetRef = kruisev1beta1.TargetReference{APIVersion: "apps/v1", Kind: "StatefulSet", Name: "web"}
		}},
		{"requiredPersistentTopology: nodeTopologyKeys is keys", func(p *kruisev1alpha1.PersistentPodState) {
			p.Spec.RequiredPersistentTopology = &kruisev1alpha1.NodeTopologyTerm{NodeTopologyKeys: []string{"z", "h"}}
		}, func(p *kruisev1beta1.PersistentPodState) {
			p.Spec.RequiredPersistentTopology = &kruisev1beta1.NodeTopologyTerm{Keys: []string{"z", "h"}}
		}},
		{"required term without keys", func(p *kruisev1alpha1.PersistentPodState) {
			p.Spec.RequiredPersistentTopology = &kruisev1alpha1.NodeTopologyTerm{}
		}, func(p *kruisev1beta1.PersistentPodState) {
			p.Spec.RequiredPersistentTopology = &kruisev1beta1.NodeTopologyTerm{}
		}},
		{"required term with an empty list", func(p *kruisev1alpha1.PersistentPodState) {
			p.Spec.RequiredPersistentTopology = &kruisev1alpha1.NodeTopologyTerm{NodeTopologyKeys: []string{}}
		}, func(p *kruisev1beta1.PersistentPodState) {
			p.Spec.RequiredPersistentTopology = &kruisev1beta1.NodeTopologyTerm{Keys: []string{}}
		}},
		{"preferredPersistentTopology: weights and keys", func(p *kruisev1alpha1.PersistentPodState) {
			p.Spec.PreferredPersistentTopology = []kruisev1alpha1.PreferredTopologyTerm{
				{Weight: 100, Preference: kruisev1alpha1.NodeTopologyTerm{NodeTopologyKeys: []string{"z"}}}, {Weight: 5}}
		}, func(p *kruisev1beta1.PersistentPodState) {
			p.Spec.PreferredPersistentTopology = []kruisev1beta1.PreferredTopologyTerm{
				{Weight: 100, Preference: kruisev1beta1.NodeTopologyTerm{Keys: []string{"z"}}}, {Weight: 5}}
		}},
		{"empty preferred list", func(p *kruisev1alpha1.PersistentPodState) {
			p.Spec.PreferredPersistentTopology = []kruisev1alpha1.PreferredTopologyTerm{}
		}, func(p *kruisev1beta1.PersistentPodState) {
			p.Spec.PreferredPersistentTopology = []kruisev1beta1.PreferredTopologyTerm{}
		}},
		{"persistentPodStateRetentionPolicy", func(p *kruisev1alpha1.PersistentPodState) {
			p.Spec.PersistentPodStateRetentionPolicy = kruisev1alpha1.RetainWhenDeleted
		}, func(p *kruisev1beta1.PersistentPodState) {
			p.Spec.PersistentPodStateRetentionPolicy = kruisev1beta1.RetainWhenDeleted
		}},
		{"persistentPodAnnotations", func(p *kruisev1alpha1.PersistentPodState) {
			p.Spec.PersistentPodAnnotations = []kruisev1alpha1.PersistentPodAnnotation{{Key: "a.io/ip"}, {Key: "b"}}
		}, func(p *kruisev1beta1.PersistentPodState) {
			p.Spec.PersistentPodAnnotations = []kruisev1beta1.PersistentPodAnnotation{{Key: "a.io/ip"}, {Key: "b"}}
		}},
		{"status.observedGeneration", func(p *kruisev1alpha1.PersistentPodState) { p.Status.ObservedGeneration = 9 },
			func(p *kruisev1beta1.PersistentPodState) { p.Status.ObservedGeneration = 9 }},
		{"status.podStates", func(p *kruisev1alpha1.PersistentPodState) {
			p.Status.PodStates = map[string]kruisev1alpha1.PodState{
				"web-0": {NodeName: "n1", NodeTopologyLabels: map[string]string{"z": "a"}, Annotations: map[string]string{"ip": "1"}},
				"web-1": {NodeTopologyLabels: map[string]string{}}, "web-2": {}}
		}, func(p *kruisev1beta1.PersistentPodState) {
			p.Status.PodStates = map[string]kruisev1beta1.PodState{
				"web-0": {NodeName: "n1", NodeTopologyLabels: map[string]string{"z": "a"}, Annotations: map[string]string{"ip": "1"}},
				"web-1": {NodeTopologyLabels: map[string]string{}}, "web-2": {}}
		}},
		{"status.conditions", func(p *kruisev1alpha1.PersistentPodState) { p.Status.Conditions = []metav1.Condition{cond} },
			func(p *kruisev1beta1.PersistentPodState) { p.Status.Conditions = []metav1.Condition{cond} }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spoke, hub := &kruisev1alpha1.PersistentPodState{}, &kruisev1beta1.PersistentPodState{}
			tt.spoke(spoke)
			tt.hub(hub)
			spoke.SetGroupVersionKind(spokeGVK)
			hub.SetGroupVersionKind(hubGVK)
			gotHub := &kruisev1beta1.PersistentPodState{}
			if err := spoke.ConvertTo(gotHub); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(hub, gotHub); diff != "" {
				t.Errorf("ConvertTo (-want +got):\n%s", diff)
			}
			gotSpoke := &kruisev1alpha1.PersistentPodState{}
			if err := gotSpoke.ConvertFrom(hub); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(spoke, gotSpoke); diff != "" {
				t.Errorf("ConvertFrom (-want +got):\n%s", diff)
			}
		})
	}
}

// TestConversionSharesNothing: changing a converted object's lists and maps leaves the source as it was.
func TestConversionSharesNothing(t *testing.T) {
	spoke := randomSpoke(3)
	spoke.Spec.RequiredPersistentTopology = &kruisev1alpha1.NodeTopologyTerm{NodeTopologyKeys: []string{"z"}}
	spoke.Spec.PreferredPersistentTopology = []kruisev1alpha1.PreferredTopologyTerm{{Weight: 1,
		Preference: kruisev1alpha1.NodeTopologyTerm{NodeTopologyKeys: []string{"h"}}}}
	spoke.Status.PodStates = map[string]kruisev1alpha1.PodState{"web-0": {NodeTopologyLabels: map[string]string{"z": "a"}}}
	spoke.Status.Conditions = []metav1.Condition{{Type: "T"}}
	spoke.Labels = map[string]string{"a": "b"}
	before := spoke.DeepCopy()
	hub := kruisev1alpha1.ToHub(spoke)
	hub.Spec.RequiredPersistentTopology.Keys[0] = "x"
	hub.Spec.PreferredPersistentTopology[0].Preference.Keys[0] = "x"
	hub.Status.PodStates["web-0"].NodeTopologyLabels["z"] = "x"
	hub.Status.Conditions[0].Type = "x"
	hub.Labels["a"] = "x"
	if diff := cmp.Diff(before, spoke); diff != "" {
		t.Errorf("the source changed (-before +after):\n%s", diff)
	}
	back := kruisev1alpha1.FromHub(hub)
	back.Spec.RequiredPersistentTopology.NodeTopologyKeys[0] = "y"
	if hub.Spec.RequiredPersistentTopology.Keys[0] != "x" {
		t.Errorf("FromHub shares the keys with the hub")
	}
}

// otherHub is a hub of another type: the conversion refuses it.
type otherHub struct {
	kruisev1beta1.PersistentPodState
}

func TestConversionRefusesAnotherHub(t *testing.T) {
	pps := &kruisev1alpha1.PersistentPodState{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns"}}
	if err := pps.ConvertTo(&otherHub{}); err == nil {
		t.Error("ConvertTo accepted another hub type")
	}
	if err := pps.ConvertFrom(&otherHub{}); err == nil {
		t.Error("ConvertFrom accepted another hub type")
	}
}

func TestFieldPathFromHub(t *testing.T) {
	for in, want := range map[string]string{
		"spec.requiredPersistentTopology.keys":                       "spec.requiredPersistentTopology.nodeTopologyKeys",
		"spec.requiredPersistentTopology.keys[3]":                    "spec.requiredPersistentTopology.nodeTopologyKeys[3]",
		"spec.preferredPersistentTopology[12].preference.keys":       "spec.preferredPersistentTopology[12].preference.nodeTopologyKeys",
		"spec.preferredPersistentTopology[0].preference.keys[1]":     "spec.preferredPersistentTopology[0].preference.nodeTopologyKeys[1]",
		"spec.preferredPersistentTopology[0].weight":                 "spec.preferredPersistentTopology[0].weight",
		"spec.persistentPodAnnotations[0].key":                       "spec.persistentPodAnnotations[0].key",
		"spec.requiredPersistentTopology.keys.x":                     "spec.requiredPersistentTopology.keys.x",
		"metadata.annotations[spec.requiredPersistentTopology.keys]": "metadata.annotations[spec.requiredPersistentTopology.keys]",
		"spec": "spec",
	} {
		if got := kruisev1alpha1.FieldPathFromHub(in); got != want {
			t.Errorf("FieldPathFromHub(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestValidateAtV1alpha1Paths: the rules applied through the hub report the fields of v1alpha1, and the
// same errors otherwise.
func TestValidateAtV1alpha1Paths(t *testing.T) {
	pps := &kruisev1alpha1.PersistentPodState{
		ObjectMeta: metav1.ObjectMeta{Name: "pps", Namespace: "default"},
		Spec: kruisev1alpha1.PersistentPodStateSpec{
			TargetRef:                  kruisev1alpha1.TargetReference{APIVersion: "apps/v1", Kind: "StatefulSet", Name: "web"},
			RequiredPersistentTopology: &kruisev1alpha1.NodeTopologyTerm{NodeTopologyKeys: []string{"zone", "bad key", "zone"}},
			PreferredPersistentTopology: []kruisev1alpha1.PreferredTopologyTerm{
				{Weight: 0, Preference: kruisev1alpha1.NodeTopologyTerm{}}},
		},
	}
	other := *pps.DeepCopy()
	other.Name = "older"
	old := pps.DeepCopy()
	old.Spec.TargetRef.Name = "db"
	got := errCauses(kruisev1alpha1.ValidatePersistentPodState(pps, nil, []kruisev1alpha1.PersistentPodState{other}, nil))
	want := []errCause{
		{field.ErrorTypeForbidden, "spec.targetRef"},
		{field.ErrorTypeInvalid, "spec.requiredPersistentTopology.nodeTopologyKeys[1]"},
		{field.ErrorTypeDuplicate, "spec.requiredPersistentTopology.nodeTopologyKeys[2]"},
		{field.ErrorTypeInvalid, "spec.preferredPersistentTopology[0].weight"},
		{field.ErrorTypeRequired, "spec.preferredPersistentTopology[0].preference.nodeTopologyKeys"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("CREATE causes (-want +got):\n%s", diff)
	}
	got = errCauses(kruisev1alpha1.ValidatePersistentPodState(pps, old, nil, nil))
	want[0] = errCause{field.ErrorTypeForbidden, "spec.targetRef"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("UPDATE causes (-want +got):\n%s", diff)
	}
	if kruisev1alpha1.ErrorsFromHub(nil) != nil {
		t.Error("ErrorsFromHub(nil) is not nil")
	}
}

// errCause is the part of a field error the tests compare.
type errCause struct {
	Type  field.ErrorType
	Field string
}

func errCauses(errs field.ErrorList) []errCause {
	var out []errCause
	for _, e := range errs {
		out = append(out, errCause{e.Type, e.Field})
	}
	return out
}

// TestOpenKruiseManifestsConvert: OpenKruise's v1alpha1 example converts to its v1beta1 example, and back.
func TestOpenKruiseManifestsConvert(t *testing.T) {
	spoke := &kruisev1alpha1.PersistentPodState{}
	hub := &kruisev1beta1.PersistentPodState{}
	for file, into := range map[string]any{manifestFile: spoke, "../v1beta1/testdata/openkruise-persistentpodstate.yaml": hub} {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		if err := yaml.UnmarshalStrict(data, into); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
	}
	if diff := cmp.Diff(hub, kruisev1alpha1.ToHub(spoke)); diff != "" {
		t.Errorf("v1alpha1 example converted (-v1beta1 example +converted):\n%s", diff)
	}
	if diff := cmp.Diff(spoke, kruisev1alpha1.FromHub(hub)); diff != "" {
		t.Errorf("v1beta1 example converted (-v1alpha1 example +converted):\n%s", diff)
	}
}
