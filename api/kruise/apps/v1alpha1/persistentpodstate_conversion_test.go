package v1alpha1_test

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/randfill"

	kruisev1alpha1 "github.com/drover-dev/drover/api/kruise/apps/v1alpha1"
	kruisev1beta1 "github.com/drover-dev/drover/api/kruise/apps/v1beta1"
)

var (
	spokeGVK = kruisev1alpha1.GroupVersion.WithKind("PersistentPodState")
	hubGVK   = kruisev1beta1.GroupVersion.WithKind("PersistentPodState")
)

// filler fills every field of both versions, with nil, empty and full lists and maps. managedFields hold
// valid JSON, as the API server writes them, so that the objects encode.
func filler(seed int64) *randfill.Filler {
	return randfill.NewWithSeed(seed).NilChance(0.2).NumElements(0, 3).Funcs(
		func(f *metav1.FieldsV1, c randfill.Continue) {
			f.SetRawBytes(fmt.Appendf(nil, `{"f:n%d":{}}`, c.Uint64()))
		})
}

func randomSpoke(seed int64) *kruisev1alpha1.PersistentPodState {
	pps := &kruisev1alpha1.PersistentPodState{}
	filler(seed).Fill(pps)
	pps.SetGroupVersionKind(spokeGVK)
	return pps
}

func randomHub(seed int64) *kruisev1beta1.PersistentPodState {
	hub := &kruisev1beta1.PersistentPodState{}
	filler(seed).Fill(hub)
	hub.SetGroupVersionKind(hubGVK)
	return hub
}

// checkSpokeRoundTrip converts spoke to the hub and back and wants the same object, and the hub's JSON to be
// the spoke's with only the apiVersion and the rename of the topology keys.
func checkSpokeRoundTrip(t *testing.T, spoke *kruisev1alpha1.PersistentPodState) {
	t.Helper()
	hub := &kruisev1beta1.PersistentPodState{}
	if err := spoke.DeepCopy().ConvertTo(hub); err != nil {
		t.Fatal(err)
	}
	back := &kruisev1alpha1.PersistentPodState{}
	if err := back.ConvertFrom(hub); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(spoke, back) {
		t.Fatalf("spoke → hub → spoke changed the object (-before +after):\n%s", cmp.Diff(spoke, back))
	}
	if diff := cmp.Diff(spokeJSON(t, spoke), hubJSONAsSpoke(t, hub)); diff != "" {
		t.Fatalf("the hub's JSON differs from the spoke's by more than the rename (-spoke +hub):\n%s", diff)
	}
}

// checkHubRoundTrip converts hub to the spoke and back and wants the same object.
func checkHubRoundTrip(t *testing.T, hub *kruisev1beta1.PersistentPodState) {
	t.Helper()
	spoke := &kruisev1alpha1.PersistentPodState{}
	if err := spoke.ConvertFrom(hub.DeepCopy()); err != nil {
		t.Fatal(err)
	}
	back := &kruisev1beta1.PersistentPodState{}
	if err := spoke.ConvertTo(back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(hub, back) {
		t.Fatalf("hub → spoke → hub changed the object (-before +after):\n%s", cmp.Diff(hub, back))
	}
}

// TestConversionRoundTrips converts random objects of each version through the other and back.
func TestConversionRoundTrips(t *testing.T) {
	for seed := range int64(300) {
		checkSpokeRoundTrip(t, randomSpoke(seed))
		checkHubRoundTrip(t, randomHub(seed))
	}
}

// FuzzConversionRoundTrip is TestConversionRoundTrips driven by go test -fuzz.
func FuzzConversionRoundTrip(f *testing.F) {
	for _, seed := range []int64{0, 1, 42, -7} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, seed int64) {
		checkSpokeRoundTrip(t, randomSpoke(seed))
		checkHubRoundTrip(t, randomHub(seed))
	})
}

// spokeJSON is the JSON document of a v1alpha1 object, without apiVersion.
func spokeJSON(t *testing.T, pps *kruisev1alpha1.PersistentPodState) map[string]any {
	t.Helper()
	doc := toDoc(t, pps)
	delete(doc, "apiVersion")
	return doc
}

// hubJSONAsSpoke is the JSON document of a hub object with its topology keys renamed as in v1alpha1,
// without apiVersion.
func hubJSONAsSpoke(t *testing.T, hub *kruisev1beta1.PersistentPodState) map[string]any {
	t.Helper()
	doc := toDoc(t, hub)
	delete(doc, "apiVersion")
	spec, _ := doc["spec"].(map[string]any)
	rename := func(term any) {
		if m, ok := term.(map[string]any); ok {
			if keys, ok := m["keys"]; ok {
				m["nodeTopologyKeys"] = keys
				delete(m, "keys")
			}
		}
	}
	rename(spec["requiredPersistentTopology"])
	terms, _ := spec["preferredPersistentTopology"].([]any)
	for _, term := range terms {
		rename(term.(map[string]any)["preference"])
	}
	return doc
}

func toDoc(t *testing.T, obj any) map[string]any {
	t.Helper()
	raw, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	doc := map[string]any{}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	return doc
}

// TestVersionsHoldTheSameFields: walking the Go types, the JSON fields of the two versions (their names,
// omitempty and types) are the same but for nodeTopologyKeys, which is keys in the hub. A field added to one
// version only fails here, before a conversion could drop it.
func TestVersionsHoldTheSameFields(t *testing.T) {
	spoke := jsonFields(reflect.TypeFor[kruisev1alpha1.PersistentPodState](), "")
	hub := jsonFields(reflect.TypeFor[kruisev1beta1.PersistentPodState](), "")
	renamed := map[string]string{}
	for path, kind := range hub {
		renamed[hubKeysRenamed(path)] = kind
	}
	if diff := cmp.Diff(spoke, renamed); diff != "" {
		t.Errorf("fields (-v1alpha1 +v1beta1 renamed):\n%s", diff)
	}
	if _, ok := hub["spec.requiredPersistentTopology.keys"]; !ok {
		t.Errorf("the hub has no spec.requiredPersistentTopology.keys: %v", hub)
	}
}

// hubKeysRenamed renames the keys of a topology term in a path of jsonFields to nodeTopologyKeys.
func hubKeysRenamed(path string) string {
	for _, term := range []string{"spec.requiredPersistentTopology", "spec.preferredPersistentTopology[].preference"} {
		if path == term+".keys" {
			return term + ".nodeTopologyKeys"
		}
	}
	return path
}

// jsonFields maps the JSON path of every field of the PersistentPodState types below t to its JSON tag
// options and Go kind; the metadata types are not entered.
func jsonFields(t reflect.Type, prefix string) map[string]string {
	out := map[string]string{}
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Map {
		if t.Kind() != reflect.Pointer {
			prefix += "[]"
		}
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct || t.PkgPath() == reflect.TypeFor[metav1.ObjectMeta]().PkgPath() {
		return out
	}
	for i := range t.NumField() {
		f := t.Field(i)
		name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		path := name
		if prefix != "" {
			path = prefix + "." + name
		}
		if name == "" { // inlined
			path = prefix
		} else {
			out[path] = opts + " " + f.Type.Kind().String()
		}
		for k, v := range jsonFields(f.Type, path) {
			out[k] = v
		}
	}
	return out
}
