package v1beta1_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	kruisev1beta1 "github.com/drover-dev/drover/api/kruise/apps/v1beta1"
)

// validPPS returns a valid PersistentPodState named name in namespace default targeting the StatefulSet web.
func validPPS(name string) *kruisev1beta1.PersistentPodState {
	return &kruisev1beta1.PersistentPodState{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: kruisev1beta1.PersistentPodStateSpec{
			TargetRef:                  kruisev1beta1.TargetReference{APIVersion: "apps/v1", Kind: "StatefulSet", Name: "web"},
			RequiredPersistentTopology: &kruisev1beta1.NodeTopologyTerm{Keys: []string{"kubernetes.io/hostname"}},
			PreferredPersistentTopology: []kruisev1beta1.PreferredTopologyTerm{{
				Weight: 100, Preference: kruisev1beta1.NodeTopologyTerm{Keys: []string{"topology.kubernetes.io/zone"}},
			}},
			PersistentPodAnnotations: []kruisev1beta1.PersistentPodAnnotation{{Key: "cni.projectcalico.org/podIP"}},
		},
	}
}

// cause is the part of a field error the tests compare.
type cause struct {
	Type  field.ErrorType
	Field string
}

func causes(errs field.ErrorList) []cause {
	var out []cause
	for _, e := range errs {
		out = append(out, cause{e.Type, e.Field})
	}
	return out
}

// allowCustom whitelists example.com/Database.
func allowCustom(gk schema.GroupKind) bool {
	return gk == schema.GroupKind{Group: "example.com", Kind: "Database"}
}

func TestValidatePersistentPodStateCreate(t *testing.T) {
	terminating := *validPPS("other")
	terminating.DeletionTimestamp = &metav1.Time{}
	tests := []struct {
		name   string
		mutate func(*kruisev1beta1.PersistentPodState)
		others []kruisev1beta1.PersistentPodState
		want   []cause
	}{
		{name: "valid", mutate: func(*kruisev1beta1.PersistentPodState) {}},
		{name: "only required topology", mutate: func(p *kruisev1beta1.PersistentPodState) { p.Spec.PreferredPersistentTopology = nil }},
		{name: "only preferred topology", mutate: func(p *kruisev1beta1.PersistentPodState) { p.Spec.RequiredPersistentTopology = nil }},
		{name: "kruise StatefulSet, any version", mutate: func(p *kruisev1beta1.PersistentPodState) {
			p.Spec.TargetRef.APIVersion = "apps.kruise.io/v1alpha1"
		}},
		{name: "TApp", mutate: func(p *kruisev1beta1.PersistentPodState) {
			p.Spec.TargetRef = kruisev1beta1.TargetReference{APIVersion: "apps.tkestack.io/v1", Kind: "TApp", Name: "t"}
		}},
		{name: "whitelisted kind", mutate: func(p *kruisev1beta1.PersistentPodState) {
			p.Spec.TargetRef = kruisev1beta1.TargetReference{APIVersion: "example.com/v2", Kind: "Database", Name: "db"}
		}},
		{name: "explicit retention policies", mutate: func(p *kruisev1beta1.PersistentPodState) {
			p.Spec.PersistentPodStateRetentionPolicy = kruisev1beta1.RetainWhenDeleted
		}},
		{name: "empty targetRef: one required error and one kind error", mutate: func(p *kruisev1beta1.PersistentPodState) {
			p.Spec.TargetRef = kruisev1beta1.TargetReference{}
		}, want: []cause{{field.ErrorTypeRequired, "spec.targetRef"}, {field.ErrorTypeInvalid, "spec.targetRef"}}},
		{name: "missing name only", mutate: func(p *kruisev1beta1.PersistentPodState) { p.Spec.TargetRef.Name = "" },
			want: []cause{{field.ErrorTypeRequired, "spec.targetRef"}}},
		{name: "kind not allowed", mutate: func(p *kruisev1beta1.PersistentPodState) { p.Spec.TargetRef.Kind = "Deployment" },
			want: []cause{{field.ErrorTypeInvalid, "spec.targetRef"}}},
		{name: "custom kind not whitelisted", mutate: func(p *kruisev1beta1.PersistentPodState) {
			p.Spec.TargetRef = kruisev1beta1.TargetReference{APIVersion: "example.com/v1", Kind: "Cache", Name: "c"}
		}, want: []cause{{field.ErrorTypeInvalid, "spec.targetRef"}}},
		{name: "unparseable apiVersion", mutate: func(p *kruisev1beta1.PersistentPodState) { p.Spec.TargetRef.APIVersion = "apps/v1/x" },
			want: []cause{{field.ErrorTypeInvalid, "spec.targetRef"}}},
		{name: "no topology", mutate: func(p *kruisev1beta1.PersistentPodState) {
			p.Spec.RequiredPersistentTopology, p.Spec.PreferredPersistentTopology = nil, nil
		}, want: []cause{{field.ErrorTypeRequired, "spec"}}},
		{name: "required without keys", mutate: func(p *kruisev1beta1.PersistentPodState) {
			p.Spec.RequiredPersistentTopology.Keys = nil
		}, want: []cause{{field.ErrorTypeRequired, "spec.requiredPersistentTopology.keys"}}},
		{name: "preferred weight out of range and without keys", mutate: func(p *kruisev1beta1.PersistentPodState) {
			p.Spec.PreferredPersistentTopology = append(p.Spec.PreferredPersistentTopology,
				kruisev1beta1.PreferredTopologyTerm{Weight: 0, Preference: kruisev1beta1.NodeTopologyTerm{Keys: []string{"a"}}},
				kruisev1beta1.PreferredTopologyTerm{Weight: 101},
			)
		}, want: []cause{
			{field.ErrorTypeInvalid, "spec.preferredPersistentTopology[1].weight"},
			{field.ErrorTypeInvalid, "spec.preferredPersistentTopology[2].weight"},
			{field.ErrorTypeRequired, "spec.preferredPersistentTopology[2].preference.keys"},
		}},
		{name: "more items than the CRD allows: one TooMany per list", mutate: func(p *kruisev1beta1.PersistentPodState) {
			keys := make([]string, kruisev1beta1.MaxTopologyKeys+1)
			for i := range keys {
				keys[i] = fmt.Sprintf("k%d", i)
			}
			p.Spec.RequiredPersistentTopology.Keys = keys
			for i := range kruisev1beta1.MaxPreferredTerms {
				p.Spec.PreferredPersistentTopology = append(p.Spec.PreferredPersistentTopology, kruisev1beta1.PreferredTopologyTerm{
					Weight: 1, Preference: kruisev1beta1.NodeTopologyTerm{Keys: []string{fmt.Sprintf("p%d", i)}}})
			}
			for _, k := range keys {
				p.Spec.PersistentPodAnnotations = append(p.Spec.PersistentPodAnnotations, kruisev1beta1.PersistentPodAnnotation{Key: k})
			}
		}, want: []cause{
			{field.ErrorTypeTooMany, "spec.preferredPersistentTopology"},
			{field.ErrorTypeTooMany, "spec.requiredPersistentTopology.keys"},
			{field.ErrorTypeTooMany, "spec.persistentPodAnnotations"},
		}},
		{name: "invalid and repeated topology keys, per key", mutate: func(p *kruisev1beta1.PersistentPodState) {
			p.Spec.RequiredPersistentTopology.Keys = []string{"zone", "bad key", "zone", "-x", "zone"}
			p.Spec.PreferredPersistentTopology[0].Preference.Keys = []string{"zone", "a/b/c"}
		}, want: []cause{
			{field.ErrorTypeInvalid, "spec.requiredPersistentTopology.keys[1]"},
			{field.ErrorTypeDuplicate, "spec.requiredPersistentTopology.keys[2]"},
			{field.ErrorTypeInvalid, "spec.requiredPersistentTopology.keys[3]"},
			{field.ErrorTypeDuplicate, "spec.requiredPersistentTopology.keys[4]"},
			{field.ErrorTypeInvalid, "spec.preferredPersistentTopology[0].preference.keys[1]"},
		}},
		{name: "the same key in two terms is fine", mutate: func(p *kruisev1beta1.PersistentPodState) {
			p.Spec.PreferredPersistentTopology[0].Preference.Keys = []string{"kubernetes.io/hostname"}
		}},
		{name: "annotation keys: empty, invalid, repeated", mutate: func(p *kruisev1beta1.PersistentPodState) {
			p.Spec.PersistentPodAnnotations = []kruisev1beta1.PersistentPodAnnotation{
				{Key: "a.io/ip"}, {Key: ""}, {Key: "a.io/ip"}, {Key: "not valid"}, {Key: strings.Repeat("k", 64)},
			}
		}, want: []cause{
			{field.ErrorTypeRequired, "spec.persistentPodAnnotations[1].key"},
			{field.ErrorTypeDuplicate, "spec.persistentPodAnnotations[2].key"},
			{field.ErrorTypeInvalid, "spec.persistentPodAnnotations[3].key"},
			{field.ErrorTypeInvalid, "spec.persistentPodAnnotations[4].key"},
		}},
		{name: "upper-case annotation key", mutate: func(p *kruisev1beta1.PersistentPodState) {
			p.Spec.PersistentPodAnnotations = []kruisev1beta1.PersistentPodAnnotation{{Key: "Example.COM/IP"}}
		}},
		{name: "unknown retention policy", mutate: func(p *kruisev1beta1.PersistentPodState) {
			p.Spec.PersistentPodStateRetentionPolicy = "Never"
		}, want: []cause{{field.ErrorTypeNotSupported, "spec.persistentPodStateRetentionPolicy"}}},
		{name: "another object targets the workload under another version", mutate: func(*kruisev1beta1.PersistentPodState) {},
			others: func() []kruisev1beta1.PersistentPodState {
				o := *validPPS("zz")
				o.Spec.TargetRef.APIVersion = "apps/v1beta2"
				return []kruisev1beta1.PersistentPodState{o, *validPPS("b"), *validPPS("c")}
			}(),
			want: []cause{{field.ErrorTypeForbidden, "spec.targetRef"}}},
		{name: "no conflict: itself, other namespace, terminating, other kind or name", mutate: func(*kruisev1beta1.PersistentPodState) {},
			others: func() []kruisev1beta1.PersistentPodState {
				self, ns, kind, name := *validPPS("pps"), *validPPS("x"), *validPPS("y"), *validPPS("z")
				ns.Namespace = "prod"
				kind.Spec.TargetRef.APIVersion = "apps.kruise.io/v1beta1"
				name.Spec.TargetRef.Name = "db"
				return []kruisev1beta1.PersistentPodState{self, ns, terminating, kind, name}
			}()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pps := validPPS("pps")
			tt.mutate(pps)
			errs := kruisev1beta1.ValidatePersistentPodState(pps, nil, tt.others, allowCustom)
			if diff := cmp.Diff(tt.want, causes(errs)); diff != "" {
				t.Errorf("causes (-want +got):\n%s\nerrors: %v", diff, errs.ToAggregate())
			}
		})
	}
}

// TestValidatePersistentPodStateConflictNamesFirst: the conflict error names the first conflicting object by
// name, and only one error is returned however many conflict.
func TestValidatePersistentPodStateConflictNamesFirst(t *testing.T) {
	others := []kruisev1beta1.PersistentPodState{*validPPS("web-c"), *validPPS("web-a"), *validPPS("web-b")}
	errs := kruisev1beta1.ValidatePersistentPodState(validPPS("new"), nil, others, nil)
	if len(errs) != 1 || !strings.Contains(errs[0].Detail, `"web-a"`) {
		t.Fatalf("want one error naming web-a, got %v", errs.ToAggregate())
	}
}

func TestValidatePersistentPodStateUpdate(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*kruisev1beta1.PersistentPodState)
		want   []cause
	}{
		{name: "topology change", mutate: func(p *kruisev1beta1.PersistentPodState) {
			p.Spec.RequiredPersistentTopology.Keys = []string{"topology.kubernetes.io/zone"}
		}},
		{name: "target name change", mutate: func(p *kruisev1beta1.PersistentPodState) { p.Spec.TargetRef.Name = "db" },
			want: []cause{{field.ErrorTypeForbidden, "spec.targetRef"}}},
		{name: "version-only change", mutate: func(p *kruisev1beta1.PersistentPodState) { p.Spec.TargetRef.APIVersion = "apps/v1beta2" },
			want: []cause{{field.ErrorTypeForbidden, "spec.targetRef"}}},
		{name: "other rules still apply", mutate: func(p *kruisev1beta1.PersistentPodState) {
			p.Spec.PreferredPersistentTopology[0].Weight = 0
		}, want: []cause{{field.ErrorTypeInvalid, "spec.preferredPersistentTopology[0].weight"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			old, pps := validPPS("pps"), validPPS("pps")
			tt.mutate(pps)
			errs := kruisev1beta1.ValidatePersistentPodState(pps, old, nil, nil)
			if diff := cmp.Diff(tt.want, causes(errs)); diff != "" {
				t.Errorf("causes (-want +got):\n%s\nerrors: %v", diff, errs.ToAggregate())
			}
		})
	}
}

// TestValidatePersistentPodStateUpdateSkipsCreateRules: an update of an object whose kind is no longer allowed,
// or that duplicates another, is accepted: those rules are checked on CREATE only.
func TestValidatePersistentPodStateUpdateSkipsCreateRules(t *testing.T) {
	pps := validPPS("pps")
	pps.Spec.TargetRef = kruisev1beta1.TargetReference{APIVersion: "example.com/v1", Kind: "Cache", Name: "c"}
	dup := *pps.DeepCopy()
	dup.Name = "older"
	if errs := kruisev1beta1.ValidatePersistentPodState(pps, pps.DeepCopy(), []kruisev1beta1.PersistentPodState{dup}, nil); len(errs) > 0 {
		t.Errorf("update refused: %v", errs.ToAggregate())
	}
	if errs := kruisev1beta1.ValidatePersistentPodState(pps, nil, []kruisev1beta1.PersistentPodState{dup}, nil); len(errs) != 2 {
		t.Errorf("the same object on CREATE: want the kind and the conflict errors, got %v", errs.ToAggregate())
	}
}

func TestSameTarget(t *testing.T) {
	ref := func(av, kind, name string) kruisev1beta1.TargetReference {
		return kruisev1beta1.TargetReference{APIVersion: av, Kind: kind, Name: name}
	}
	tests := []struct {
		a, b kruisev1beta1.TargetReference
		want bool
	}{
		{ref("apps/v1", "StatefulSet", "web"), ref("apps/v1beta2", "StatefulSet", "web"), true},
		{ref("apps/v1", "StatefulSet", "web"), ref("apps.kruise.io/v1beta1", "StatefulSet", "web"), false},
		{ref("apps/v1", "StatefulSet", "web"), ref("apps/v1", "StatefulSet", "db"), false},
		{ref("apps/v1", "StatefulSet", "web"), ref("apps/v1", "TApp", "web"), false},
		{ref("a/b/c", "StatefulSet", "web"), ref("a/b/c", "StatefulSet", "web"), false},
	}
	for _, tt := range tests {
		if got := kruisev1beta1.SameTarget(tt.a, tt.b); got != tt.want {
			t.Errorf("SameTarget(%v, %v) = %t, want %t", tt.a, tt.b, got, tt.want)
		}
	}
}

// FuzzValidatePersistentPodState: the rules never panic, every error points into spec, and an object built only
// from the parsed comma lists of the generator's annotations never breaks the key rules.
func FuzzValidatePersistentPodState(f *testing.F) {
	f.Add("apps/v1", "StatefulSet", "web", "kubernetes.io/hostname", "zone,zone", int32(100), "a.io/ip", "WhenScaled")
	f.Add("", "", "", "", "", int32(0), "", "x")
	f.Add("a/b/c", "Database", "db", " bad key ", "-x", int32(101), "A.io/IP,a.io/ip", "")
	f.Fuzz(func(t *testing.T, apiVersion, kind, name, required, preferred string, weight int32, annotations, policy string) {
		pps := validPPS("pps")
		pps.Spec.TargetRef = kruisev1beta1.TargetReference{APIVersion: apiVersion, Kind: kind, Name: name}
		pps.Spec.RequiredPersistentTopology = &kruisev1beta1.NodeTopologyTerm{Keys: strings.Split(required, ",")}
		pps.Spec.PreferredPersistentTopology = []kruisev1beta1.PreferredTopologyTerm{{
			Weight: weight, Preference: kruisev1beta1.NodeTopologyTerm{Keys: kruisev1beta1.ParseCommaList(preferred)},
		}}
		pps.Spec.PersistentPodAnnotations = nil
		for _, k := range strings.Split(annotations, ",") {
			pps.Spec.PersistentPodAnnotations = append(pps.Spec.PersistentPodAnnotations, kruisev1beta1.PersistentPodAnnotation{Key: k})
		}
		pps.Spec.PersistentPodStateRetentionPolicy = kruisev1beta1.PersistentPodStateRetentionPolicyType(policy)
		others := []kruisev1beta1.PersistentPodState{*pps.DeepCopy()}
		others[0].Name = "other"
		for _, old := range []*kruisev1beta1.PersistentPodState{nil, validPPS("pps")} {
			for _, e := range kruisev1beta1.ValidatePersistentPodState(pps, old, others, allowCustom) {
				if e.Field != "spec" && !strings.HasPrefix(e.Field, "spec.") {
					t.Fatalf("error outside spec: %v", e)
				}
				if e.Type == field.ErrorTypeDuplicate && strings.HasPrefix(e.Field, "spec.preferredPersistentTopology") {
					t.Fatalf("a parsed comma list holds a duplicate: %v", e)
				}
			}
		}
	})
}
