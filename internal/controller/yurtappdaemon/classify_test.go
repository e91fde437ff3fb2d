package yurtappdaemon

import (
	"context"
	"errors"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"

	openyurtv1alpha1 "github.com/drover-dev/drover/api/openyurt/apps/v1alpha1"
	openyurtv1beta1 "github.com/drover-dev/drover/api/openyurt/apps/v1beta1"
	"github.com/drover-dev/drover/internal/controller/yurtappdaemon/render"
)

// classified is a classification reduced to names, for comparison.
type classified struct {
	Keep      map[string]string // pool → child
	Create    []string
	Awaiting  []string
	Deletes   []string // "name (reason)"
	OtherKind map[string][]string
	Unmapped  []string
}

func reduce(c classification) classified {
	out := classified{Keep: map[string]string{}, Create: c.create, Awaiting: c.awaiting, OtherKind: map[string][]string{}}
	for pool, obj := range c.keep {
		out.Keep[pool] = obj.GetName()
	}
	for _, d := range c.deletes {
		out.Deletes = append(out.Deletes, d.obj.GetName()+" ("+d.reason+")")
	}
	for pool, objs := range c.otherKind {
		for _, o := range objs {
			out.OtherKind[pool] = append(out.OtherKind[pool], o.GetName())
		}
	}
	for _, o := range c.unmapped {
		out.Unmapped = append(out.Unmapped, o.GetName())
	}
	return out
}

func TestClassify(t *testing.T) {
	k := ownerKindCases[0]
	ref := k.ref()
	pools := poolSet{
		eligible:     []render.Pool{{Name: "a"}, {Name: "b"}, {Name: "c"}, {Name: "d"}},
		invalidNames: []string{"Bad_Name"},
	}
	annotated := func(name, pool string) client.Object {
		d := child(name, "", ref)
		d.Annotations = map[string]string{openyurtv1alpha1.AnnotationRefNodePool: pool}
		return d
	}
	terminating := child("dns-c", "c", ref)
	terminating.DeletionTimestamp = &metav1.Time{Time: time.Unix(1, 0)}
	terminating.Finalizers = []string{"x"}
	children := ownedChildren{
		openyurtv1alpha1.DeploymentTemplateType: {
			child("dns-a", "a", ref),
			annotated("legacy-b-x1", "b"),   // mapped by the annotation
			child("dns-b", "b", ref),        // the deterministic name wins over the older legacy one
			child("dns-gone", "gone", ref),  // deselected
			child("dns-x", "Bad_Name", ref), // a pool skipped for its name: left alone
			terminating,                     // pool c waits for it to go
			child("stray", "", ref),         // unmapped
			annotated("dns-a-other", "zz"),  // the annotation wins over the label; zz is not eligible
		},
		openyurtv1alpha1.StatefulSetTemplateType: {
			statefulChild("dns-a", "a", ref),
			statefulChild("dns-d", "d", ref),
			statefulChild("dns-old", "gone", ref),
		},
	}
	got := reduce(classify(ownerName, openyurtv1alpha1.DeploymentTemplateType, pools, children))
	want := classified{
		Keep:      map[string]string{"a": "dns-a", "b": "dns-b"},
		Create:    []string{"d"},
		Awaiting:  []string{"c"},
		Deletes:   []string{"dns-a-other (deselected)", "dns-gone (deselected)", "dns-old (deselected)", "legacy-b-x1 (duplicate)"},
		OtherKind: map[string][]string{"a": {"dns-a"}, "d": {"dns-d"}},
		Unmapped:  []string{"stray"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("classification (-want +got):\n%s", diff)
	}
}

func TestSelectPools(t *testing.T) {
	sel := labels.SelectorFromSet(map[string]string{"tier": "edge"})
	pools := []openyurtv1beta1.NodePool{
		*pool("z", edgeLabels).Obj(),
		*pool("a", edgeLabels).Obj(),
		*pool("cloud", map[string]string{"tier": "cloud"}).Obj(),
		*pool("going", edgeLabels).Deleting().Obj(),
		*pool("this-name-is-far-too-long-to-be-a-label-value-so-it-is-skipped-x", edgeLabels).Obj(),
	}
	got := selectPools(pools, sel)
	if diff := cmp.Diff([]string{"a", "z"}, got.names()); diff != "" {
		t.Errorf("eligible (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"this-name-is-far-too-long-to-be-a-label-value-so-it-is-skipped-x"}, got.invalidNames); diff != "" {
		t.Errorf("invalid names (-want +got):\n%s", diff)
	}
}

func TestSlowStart(t *testing.T) {
	items := []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}
	tests := map[string]struct {
		maxBatch int
		fail     map[int]error
		wantDone int
	}{
		"all succeed":                        {maxBatch: 4, wantDone: 10},
		"a failure stops after its batch":    {maxBatch: 4, fail: map[int]error{3: errInjected}, wantDone: 7},
		"the cap bounds the batches":         {maxBatch: 2, fail: map[int]error{4: errInjected}, wantDone: 5},
		"a failure in the first batch":       {maxBatch: 32, fail: map[int]error{0: errInjected}, wantDone: 1},
		"name conflicts do not stop the run": {maxBatch: 4, fail: map[int]error{0: &nameConflictError{name: "x"}}, wantDone: 10},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			var running, peak atomic.Int32
			res := slowStart(context.Background(), items, tc.maxBatch, func(_ context.Context, i int) (int, error) {
				n := running.Add(1)
				defer running.Add(-1)
				for {
					p := peak.Load()
					if n <= p || peak.CompareAndSwap(p, n) {
						break
					}
				}
				time.Sleep(time.Millisecond)
				return i * 10, tc.fail[i]
			})
			done := 0
			for i, a := range res {
				if a.done {
					done++
					if !errors.Is(a.err, tc.fail[i]) || (a.err == nil && a.out != i*10) {
						t.Errorf("item %d: %v, %v", i, a.out, a.err)
					}
				}
			}
			if done != tc.wantDone || slices.ContainsFunc(res[:done], func(a attempt[int]) bool { return !a.done }) {
				t.Errorf("done = %d, want the first %d", done, tc.wantDone)
			}
			if int(peak.Load()) > tc.maxBatch {
				t.Errorf("peak concurrency %d above the cap %d", peak.Load(), tc.maxBatch)
			}
		})
	}
}

func TestSlowStartRecoversPanics(t *testing.T) {
	res := slowStart(context.Background(), []int{1}, 1, func(context.Context, int) (int, error) { panic("boom") })
	if res[0].err == nil {
		t.Fatal("a panic was not turned into an error")
	}
}
