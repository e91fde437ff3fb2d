package bench

import (
	"fmt"
	"math"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	controlv1alpha1 "github.com/drover-dev/drover/api/kubestellar/control/v1alpha1"
	"github.com/drover-dev/drover/internal/kubestellarsim"
	"github.com/drover-dev/drover/internal/stagedbindingpolicy/sbpcel"
	"github.com/drover-dev/drover/internal/stagedbindingpolicy/stager"
)

func TestSBPTiers(t *testing.T) {
	for _, tc := range []struct {
		n     int
		sizes []int
	}{
		{1000, []int{10, 90, 900}},
		{3, []int{1, 1, 1}},
		{50, []int{1, 4, 45}},
		{10, []int{1, 1, 8}},
	} {
		tiers, err := newSBPTiers(tc.n)
		if err != nil {
			t.Fatalf("%d clusters: %v", tc.n, err)
		}
		if got := tiers.sizes(); fmt.Sprint(got) != fmt.Sprint(tc.sizes) {
			t.Errorf("%d clusters: tier sizes %v, want %v", tc.n, got, tc.sizes)
		}
		counts := map[int]int{}
		for i := range tc.n {
			counts[tiers.tierOf(i)]++
		}
		for st := range 3 {
			if counts[st+1] != tc.sizes[st] {
				t.Errorf("%d clusters: tierOf puts %d in tier %d, want %d", tc.n, counts[st+1], st+1, tc.sizes[st])
			}
			if tiers.tierOf(tiers.first(st)) != st+1 {
				t.Errorf("%d clusters: the held cluster of stage %d is in tier %d", tc.n, st, tiers.tierOf(tiers.first(st)))
			}
		}
	}
	if _, err := newSBPTiers(2); err == nil {
		t.Error("2 clusters cannot make three tiers")
	}
	tiers, _ := newSBPTiers(1000)
	if got := []string{tiers.held(0), tiers.held(1), tiers.held(2)}; fmt.Sprint(got) != "[bench-c0000 bench-c0010 bench-c0100]" {
		t.Errorf("held clusters %v", got)
	}
}

// combinedStatus is the content of a CombinedStatus of the scenario's collector, as kssim writes it.
func combinedStatus(t *testing.T, count, available string) map[string]any {
	t.Helper()
	cs := &controlv1alpha1.CombinedStatus{Results: []controlv1alpha1.NamedStatusCombination{
		{Name: "other", ColumnNames: []string{"count"}, Rows: []controlv1alpha1.StatusCombinationRow{
			{Columns: []controlv1alpha1.Value{{Type: controlv1alpha1.TypeNumber, Number: ptr.To("99")}}}}},
		{Name: sbpCollector, ColumnNames: []string{"count", "available"}, Rows: []controlv1alpha1.StatusCombinationRow{
			{Columns: []controlv1alpha1.Value{
				{Type: controlv1alpha1.TypeNumber, Number: ptr.To(count)},
				{Type: controlv1alpha1.TypeNumber, Number: ptr.To(available)},
			}}}},
	}}
	cs.Name, cs.Namespace, cs.UID, cs.ResourceVersion = "uid.uid", sbpNamespace, "cs-uid", count+"-"+available
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(cs)
	if err != nil {
		t.Fatal(err)
	}
	return obj
}

// TestSBPColumnsAgreeWithTheCondition reads the values as the bench does and evaluates the stages' condition
// as the controller does, on the same objects: both must call the same CombinedStatuses satisfied.
func TestSBPColumnsAgreeWithTheCondition(t *testing.T) {
	prg, err := sbpcel.NewCache(sbpcel.Options{}).Compile(sbpcel.Condition, sbpCondition(sbpCollector))
	if err != nil {
		t.Fatal(err)
	}
	dests := []string{"bench-c0000", "bench-c0001", "bench-c0002"}
	for _, tc := range []struct {
		count, available string
		want             bool
	}{
		{"3", "3", true},
		{"3", "6", true},
		{"2", "4", false}, // a destination has not reported, whatever the others report
		{"3", "2", false}, // a destination reports nothing available
		{"0", "0", false},
	} {
		obj := combinedStatus(t, tc.count, tc.available)
		count, available, ok := sbpColumns(obj)
		if !ok || fmt.Sprint(count) != tc.count || fmt.Sprint(available) != tc.available {
			t.Errorf("sbpColumns = %v, %v, %v; want %s, %s", count, available, ok, tc.count, tc.available)
		}
		if got := sbpSatisfies(count, available, len(dests)); got != tc.want {
			t.Errorf("count %s available %s: sbpSatisfies = %v, want %v", tc.count, tc.available, got, tc.want)
		}
		got, err := prg.Eval(sbpcel.Input{
			Clause:         sbpcel.DownsyncClause{Group: "apps", Version: "v1", Resource: "deployments", Namespace: sbpNamespace, Name: "sbp-0000", StatusCollectors: []string{sbpCollector}},
			CombinedStatus: &sbpcel.CSInput{Object: obj},
			Destinations:   dests,
		})
		if err != nil || got != tc.want {
			t.Errorf("count %s available %s: the condition gives %v (%v), want %v", tc.count, tc.available, got, err, tc.want)
		}
	}
	if _, _, ok := sbpColumns(map[string]any{"results": []any{}}); ok {
		t.Error("a CombinedStatus without the collector's result has no values")
	}
	obj := combinedStatus(t, "1", "1")
	obj["results"].([]any)[1].(map[string]any)["rows"] = []any{}
	if _, _, ok := sbpColumns(obj); ok {
		t.Error("a result without rows has no values")
	}
}

func TestSBPPolicyIsValid(t *testing.T) {
	sbp := sbpPolicy("bench-sbp-01", sbpNamespace)
	if errs := stager.Validate(sbp, sbpcel.NewCache(sbpcel.Options{})); len(errs) > 0 {
		t.Fatalf("the scenario's policy is refused: %v", errs)
	}
	if len(sbp.Spec.Stages) != 3 {
		t.Fatalf("stages %v", sbp.Spec.Stages)
	}
	for i, st := range sbp.Spec.Stages {
		if st.Name != sbpStages[i] || st.ClusterSelectors[0].MatchLabels[sbpTierLabel] != fmt.Sprint(i+1) {
			t.Errorf("stage %d: %s on %v", i, st.Name, st.ClusterSelectors)
		}
	}
	if got := stager.BindingPolicyName(sbp.Name, "s2"); got != "bench-sbp-01.stage.s2" {
		t.Errorf("BindingPolicy name %s: the name must not be shortened", got)
	}
}

func TestSBPScriptHoldsOnlyTheLastObject(t *testing.T) {
	holding := []string{"bench-c0010", "bench-c0100"}
	entries := sbpScript(4, 2, holding)
	if len(entries) != 6 {
		t.Fatalf("%d entries, want 4 objects and 2 held clusters", len(entries))
	}
	for i, e := range entries[:4] {
		if e.Cluster != kubestellarsim.AllClusters || e.Name != sbpObjectName(i) || e.Status["availableReplicas"] != int64(2) {
			t.Errorf("entry %d: %+v", i, e)
		}
		if e.Group != "apps" || e.Resource != "deployments" || e.Namespace != sbpNamespace {
			t.Errorf("entry %d names %s", i, e.Ref())
		}
	}
	// The held entries come last: a later entry wins over the AllClusters one.
	for i, e := range entries[4:] {
		if e.Cluster != holding[i] || e.Name != sbpObjectName(3) || e.Status != nil {
			t.Errorf("held entry %d: %+v", i, e)
		}
	}
}

func TestSBPStats(t *testing.T) {
	ms := func(v ...int) []time.Duration {
		out := make([]time.Duration, len(v))
		for i, x := range v {
			out[i] = time.Duration(x) * time.Millisecond
		}
		return out
	}
	in := ms(50, 10, 40, 30, 20, 100, 90, 80, 70, 60)
	p50, p95, highest := sbpStats(in)
	if p50 != 50*time.Millisecond || p95 != 100*time.Millisecond || highest != 100*time.Millisecond {
		t.Errorf("stats %s %s %s", p50, p95, highest)
	}
	if in[0] != 50*time.Millisecond {
		t.Error("sbpStats sorted its input")
	}
	if a, b, c := sbpStats(nil); a != 0 || b != 0 || c != 0 {
		t.Error("no samples must give zeros")
	}
	if n := sbpCountOver(in, 60*time.Millisecond); n != 4 {
		t.Errorf("%d over 60 ms, want 4", n)
	}
	if r := sbpRatio(30*time.Millisecond, 10*time.Millisecond); r != 3 {
		t.Errorf("ratio %v", r)
	}
	if r := sbpRatio(time.Second, 0); r != 0 {
		t.Errorf("ratio over nothing %v", r)
	}
	if sbpBucketMs(math.Inf(1)) != -1 || sbpBucketMs(0.25) != 250 {
		t.Error("bucket bounds")
	}
}
