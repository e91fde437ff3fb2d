package yurtappdaemon

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"

	openyurtv1alpha1 "github.com/drover-dev/drover/api/openyurt/apps/v1alpha1"
	openyurtv1beta1 "github.com/drover-dev/drover/api/openyurt/apps/v1beta1"
	"github.com/drover-dev/drover/internal/yurtappdaemon/render"
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
