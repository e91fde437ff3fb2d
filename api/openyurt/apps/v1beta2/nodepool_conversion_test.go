package v1beta2_test

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/conversion"
	"sigs.k8s.io/randfill"

	openyurtv1alpha1 "github.com/drover-dev/drover/api/openyurt/apps/v1alpha1"
	openyurtv1beta1 "github.com/drover-dev/drover/api/openyurt/apps/v1beta1"
	openyurtv1beta2 "github.com/drover-dev/drover/api/openyurt/apps/v1beta2"
)

// filler fills every field, with nil, empty and full lists and maps (metav1.Time fills whole seconds, as JSON
// keeps them). managedFields hold valid JSON, as the API server writes them.
func filler(seed int64) *randfill.Filler {
	return randfill.NewWithSeed(seed).NilChance(0.2).NumElements(0, 3).Funcs(
		func(f *metav1.FieldsV1, c randfill.Continue) {
			f.SetRawBytes(fmt.Appendf(nil, `{"f:n%d":{}}`, c.Uint64()))
		})
}

// spoke is a version that converts through the hub.
type spoke interface {
	conversion.Convertible
	DeepCopyObject() runtime.Object
}

var spokes = map[string]func() spoke{
	"v1beta1":  func() spoke { return &openyurtv1beta1.NodePool{} },
	"v1alpha1": func() spoke { return &openyurtv1alpha1.NodePool{} },
}

func randomHub(seed int64) *openyurtv1beta2.NodePool {
	hub := &openyurtv1beta2.NodePool{}
	filler(seed).Fill(hub)
	hub.SetGroupVersionKind(openyurtv1beta2.GroupVersion.WithKind("NodePool"))
	return hub
}

func randomSpoke(version string, seed int64) spoke {
	s := spokes[version]()
	filler(seed).Fill(s)
	s.GetObjectKind().SetGroupVersionKind(openyurtv1beta2.GroupVersion.WithKind("NodePool").GroupKind().WithVersion(version))
	return s
}

func toHub(t *testing.T, s spoke) *openyurtv1beta2.NodePool {
	t.Helper()
	hub := &openyurtv1beta2.NodePool{}
	if err := s.DeepCopyObject().(spoke).ConvertTo(hub); err != nil {
		t.Fatal(err)
	}
	return hub
}

func fromHub(t *testing.T, version string, hub *openyurtv1beta2.NodePool) spoke {
	t.Helper()
	s := spokes[version]()
	if err := s.ConvertFrom(hub.DeepCopy()); err != nil {
		t.Fatal(err)
	}
	return s
}

// semanticDiff fails unless want and got are equal as the API server would store them: nil and empty lists
// and maps alike.
func semanticDiff(t *testing.T, what string, want, got any) {
	t.Helper()
	if !equality.Semantic.DeepEqual(want, got) {
		t.Fatalf("%s changed the object (-before +after):\n%s", what, cmp.Diff(want, got))
	}
}

// TestConversionRoundTrips converts random objects of each version through the other and back: hub → spoke
// → hub and spoke → hub → spoke, for both spokes, and a spoke made from a hub (carrying the annotation)
// through the hub again.
func TestConversionRoundTrips(t *testing.T) {
	for seed := range int64(500) {
		for version := range spokes {
			checkRoundTrips(t, version, seed)
		}
	}
}

// FuzzConversionRoundTrip is TestConversionRoundTrips driven by go test -fuzz.
func FuzzConversionRoundTrip(f *testing.F) {
	for _, seed := range []int64{0, 1, 42, -7} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, seed int64) {
		for version := range spokes {
			checkRoundTrips(t, version, seed)
		}
	})
}

func checkRoundTrips(t *testing.T, version string, seed int64) {
	t.Helper()
	hub := randomHub(seed)
	viaSpoke := fromHub(t, version, hub)
	semanticDiff(t, fmt.Sprintf("seed %d: hub → %s → hub", seed, version), hub, toHub(t, viaSpoke))
	semanticDiff(t, fmt.Sprintf("seed %d: %s from a hub → hub → %s", seed, version, version), viaSpoke,
		fromHub(t, version, toHub(t, viaSpoke)))

	s := randomSpoke(version, seed)
	semanticDiff(t, fmt.Sprintf("seed %d: %s → hub → %s", seed, version, version), s, fromHub(t, version, toHub(t, s)))
}

// TestConversionAcrossSpokes: what each spoke lacks survives a trip through the other (v1alpha1's selector
// through v1beta1, v1beta2's election fields through both).
func TestConversionAcrossSpokes(t *testing.T) {
	for seed := range int64(200) {
		alpha := randomSpoke("v1alpha1", seed)
		beta := fromHub(t, "v1beta1", toHub(t, alpha))
		semanticDiff(t, fmt.Sprintf("seed %d: v1alpha1 → v1beta1 → v1alpha1", seed), alpha,
			fromHub(t, "v1alpha1", toHub(t, beta)))

		hub := randomHub(seed)
		alpha = fromHub(t, "v1alpha1", hub)
		beta = fromHub(t, "v1beta1", toHub(t, alpha))
		semanticDiff(t, fmt.Sprintf("seed %d: hub → v1alpha1 → v1beta1 → hub", seed), hub, toHub(t, beta))
	}
}
