package core

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/apimachinery/pkg/util/managedfields/managedfieldstest"

	kruisev1beta1 "github.com/drover-dev/drover/api/kruise/apps/v1beta1"
)

// storedSize returns the size etcd stores for pps: its JSON with the managedFields a real field manager
// computes when a generator writes the spec and the controller then writes the status through the status
// subresource (resourceVersion is not stored).
func storedSize(t testing.TB, pps *kruisev1beta1.PersistentPodState) int {
	t.Helper()
	gvk := kruisev1beta1.GroupVersion.WithKind("PersistentPodState")
	fm := managedfieldstest.NewTestFieldManagerSubresource(managedfields.NewDeducedTypeConverter(), gvk, "status")
	obj := pps.DeepCopy()
	obj.APIVersion, obj.Kind = gvk.GroupVersion().String(), gvk.Kind
	obj.ManagedFields = nil
	specOnly := obj.DeepCopy()
	specOnly.Status = kruisev1beta1.PersistentPodStateStatus{}
	if err := fm.Update(toUnstructured(t, specOnly), "drover-generator"); err != nil {
		t.Fatal(err)
	}
	if err := fm.Update(toUnstructured(t, obj), "drover"); err != nil {
		t.Fatal(err)
	}
	live, ok := fm.Live().(*unstructured.Unstructured)
	if !ok {
		t.Fatalf("live object is %T", fm.Live())
	}
	live.SetResourceVersion("")
	raw, err := json.Marshal(live)
	if err != nil {
		t.Fatal(err)
	}
	if len(fm.ManagedFields()) != 2 {
		t.Fatalf("want the generator's and the controller's managedFields, got %d entries", len(fm.ManagedFields()))
	}
	return len(raw)
}

func toUnstructured(t testing.TB, obj runtime.Object) *unstructured.Unstructured {
	t.Helper()
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		t.Fatal(err)
	}
	return &unstructured.Unstructured{Object: m}
}

// shapes are record shapes: the record of ordinal i.
var shapes = map[string]func(i int) State{
	"node name only": func(i int) State { return State{NodeName: fmt.Sprintf("node-%03d", i%100)} },
	"two keys": func(i int) State {
		n := fmt.Sprintf("node-%03d", i%100)
		return st(n, zoneKey, fmt.Sprintf("zone-%d", i%3), hostKey, n)
	},
	"two keys, long node names": func(i int) State {
		n := fmt.Sprintf("ip-10-0-%d-%d.eu-west-1.compute.internal", i%100, i%250)
		return st(n, zoneKey, fmt.Sprintf("eu-west-1%c", 'a'+i%3), hostKey, n)
	},
	"three keys and two annotations": func(i int) State {
		n := fmt.Sprintf("node-%03d", i%100)
		return withAnnos(st(n, zoneKey, "z", hostKey, n, rackKey, "r"), ipKey, fmt.Sprintf("10.0.%d.%d", i/250, i%250), macKey, "aa:bb")
	},
	"one key and one annotation": func(i int) State {
		return withAnnos(st("n", zoneKey, "z"), ipKey, "1")
	},
	"annotations only": func(i int) State { return State{Annotations: pairs(ipKey, "1")} },
	"many keys and annotations": func(i int) State {
		var labels, annotations []string
		for k := range 12 {
			labels = append(labels, fmt.Sprintf("example.com/label-%d", k), fmt.Sprint(i))
			annotations = append(annotations, fmt.Sprintf("a%d", k), "v")
		}
		return withAnnos(st("n", labels...), annotations...)
	},
}

func statesOf(shape func(int) State, n int) States {
	s := States{}
	for i := range n {
		s[fmt.Sprintf("web-%d", i)] = shape(i)
	}
	return s
}

// TestEstimateCoversStoredSize: what records add to the stored object (their JSON and their managedFields)
// never exceeds what they add to the estimate, for any shape; at scale (where the fixed managedFields
// headers are amortised) the estimate covers the whole stored object.
func TestEstimateCoversStoredSize(t *testing.T) {
	for name, shape := range shapes {
		t.Run(name, func(t *testing.T) {
			one := newPPS(withStates(statesOf(shape, 1)))
			realOne, estOne := storedSize(t, one), Estimate(one, one.Status.PodStates)
			for _, n := range []int{2, 10, 300} {
				pps := newPPS(withStates(statesOf(shape, n)))
				real, est := storedSize(t, pps), Estimate(pps, pps.Status.PodStates)
				if est-estOne < real-realOne {
					t.Errorf("%d records: estimate grew by %d, stored size by %d", n, est-estOne, real-realOne)
				}
			}
			pps := newPPS(withStates(statesOf(shape, 300)))
			if real, est := storedSize(t, pps), Estimate(pps, pps.Status.PodStates); est < real {
				t.Errorf("300 records: estimate %d below the stored size %d", est, real)
			}
		})
	}
}

// TestEstimateScale measures the 5,000-pod, two-key case with short and long node names.
func TestEstimateScale(t *testing.T) {
	for _, name := range []string{"two keys", "two keys, long node names"} {
		pps := newPPS(withStates(statesOf(shapes[name], 5000)))
		real, est := storedSize(t, pps), Estimate(pps, pps.Status.PodStates)
		if est < real {
			t.Errorf("%s: estimate %d below the stored size %d", name, est, real)
		}
		t.Logf("%s, 5000 records: stored %d bytes, estimate %d (+%d, %.1f%%), %d bytes/record", name, real, est,
			est-real, 100*float64(est-real)/float64(real), real/5000)
	}
}

// TestEstimate pins the formula and checks that it reads the object without modifying it.
func TestEstimate(t *testing.T) {
	states := States{"web-0": withAnnos(st("n1", zoneHost...), ipKey, "1"), "web-12": {NodeName: "n2"}}
	pps := newPPS(withStates(States{"old": st("x")}))
	pps.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "drover", FieldsV1: metav1.NewFieldsV1(`{"f:status":{}}`)}}
	before := pps.DeepCopy()

	got := Estimate(pps, states)
	if diff := cmp.Diff(before, pps); diff != "" {
		t.Fatalf("Estimate modified the object (-before +after):\n%s", diff)
	}
	encoded := pps.DeepCopy()
	encoded.ManagedFields = nil
	encoded.APIVersion, encoded.Kind = "apps.kruise.io/v1beta1", "PersistentPodState"
	encoded.Status.PodStates = states
	raw, err := json.Marshal(encoded)
	if err != nil {
		t.Fatal(err)
	}
	managed := (len("web-0") + EntryOverhead + len("nodeName") + len("nodeTopologyLabels") + len(zoneKey) + len(hostKey) +
		2*KeyOverhead + len("annotations") + AnnotationsOverhead + len(ipKey) + KeyOverhead) + (len("web-12") + EntryOverhead + len("nodeName"))
	if diff := cmp.Diff(len(raw)+managed, got); diff != "" {
		t.Errorf("estimate (-want +got):\n%s", diff)
	}
	if got < len(raw) {
		t.Errorf("estimate %d below the encoded size %d without managedFields", got, len(raw))
	}
	encoded.ManagedFields = before.ManagedFields
	if diff := cmp.Diff(got, Estimate(encoded, states)); diff != "" {
		t.Errorf("type meta or managedFields changed the estimate (-want +got):\n%s", diff)
	}
	if empty := Estimate(pps, nil); empty >= got {
		t.Errorf("estimate without records %d not below %d", empty, got)
	}
}

// TestGuardOrdersNewRecordsByOrdinal: with room for k new records, exactly the first k in ordinal order are
// added, both when the limit is just enough for them and when it is one byte short of the next one.
func TestGuardOrdersNewRecordsByOrdinal(t *testing.T) {
	rec := func(node string) State { return st(node, zoneHost...) }
	// Sorted: web-1, web-2, db-3, web-10, then names without an ordinal: web, web-x.
	order := []string{"web-1", "web-2", "db-3", "web-10", "web", "web-x"}
	for _, current := range []States{{"web-0": rec("n1")}, nil} {
		pps := newPPS(withStates(current))
		want := firstRecords(current != nil, order, len(order))
		for k := 0; k <= len(order); k++ {
			fit := firstRecords(current != nil, order, k)
			limits := map[string]int{"just enough": Estimate(pps, fit)}
			if current == nil {
				limits["just enough"]++ // the incremental estimate counts a comma after the first record too
			}
			if k < len(order) {
				limits["one byte short of the next"] = Estimate(pps, firstRecords(current != nil, order, k+1)) - 1
			}
			for limitName, limit := range limits {
				t.Run(fmt.Sprintf("current %d, %d fit, %s", len(current), k, limitName), func(t *testing.T) {
					got, left := Guard(pps, want, limit)
					if diff := cmp.Diff(sortedKeys(fit), sortedKeys(got)); diff != "" {
						t.Errorf("records (-want +got):\n%s", diff)
					}
					if left != len(order)-k {
						t.Errorf("left out %d, want %d", left, len(order)-k)
					}
					if est := Estimate(pps, got); est > limit {
						t.Errorf("estimate %d over the limit %d after additions", est, limit)
					}
				})
			}
		}
	}
}

// firstRecords returns the records of the first k names on n2, and web-0 updated to n3 when withCurrent.
func firstRecords(withCurrent bool, order []string, k int) States {
	s := States{}
	if withCurrent {
		s["web-0"] = st("n3", zoneHost...)
	}
	for _, n := range order[:k] {
		s[n] = st("n2", zoneHost...)
	}
	return s
}

func sortedKeys(m States) []string {
	if len(m) == 0 {
		return nil
	}
	return slices.Sorted(maps.Keys(m))
}

func TestGuard(t *testing.T) {
	current := States{"web-0": st("n1", zoneHost...), "web-1": st("n1", zoneHost...), "web-2": st("n1", zoneHost...)}
	moved := st("n3", zoneKey, "b", hostKey, "n3")
	cases := map[string]struct {
		want     States
		limit    int
		wantGot  States
		wantLeft int
	}{
		"everything fits": {
			want:    States{"web-0": moved, "web-3": moved, "web-4": moved},
			limit:   DefaultSizeLimit,
			wantGot: States{"web-0": moved, "web-3": moved, "web-4": moved},
		},
		"updates and removals apply over the limit": {
			want:    States{"web-0": moved, "web-2": current["web-2"], "web-3": moved, "web-4": moved},
			limit:   0,
			wantGot: States{"web-0": moved, "web-2": current["web-2"]}, wantLeft: 2,
		},
		"everything removed": {want: nil, limit: 0, wantGot: nil},
		"only new records, none fit": {
			want: States{"web-7": moved}, limit: 10, wantGot: nil, wantLeft: 1,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			pps := newPPS(withStates(current))
			before := pps.DeepCopy()
			got, left := Guard(pps, tc.want, tc.limit)
			if diff := cmp.Diff(tc.wantGot, got); diff != "" {
				t.Errorf("records (-want +got):\n%s", diff)
			}
			if left != tc.wantLeft {
				t.Errorf("left out %d, want %d", left, tc.wantLeft)
			}
			if diff := cmp.Diff(before, pps); diff != "" {
				t.Errorf("Guard modified the object (-before +after):\n%s", diff)
			}
		})
	}
}

func TestCompareByOrdinal(t *testing.T) {
	names := []string{"web", "b-2", "web-10", "a-2", "web-x", "web-1", "a", "web-01"}
	slices.SortFunc(names, compareByOrdinal)
	want := []string{"web-01", "web-1", "a-2", "b-2", "web-10", "a", "web", "web-x"}
	if diff := cmp.Diff(want, names); diff != "" {
		t.Errorf("order (-want +got):\n%s", diff)
	}
}
