package core

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/ptr"

	tkestackv1 "github.com/drover-dev/drover/api/tkestack/apps/v1"
)

func ownedPod(name, instance string, owner metav1.OwnerReference) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: testNS, Labels: map[string]string{"app": "web"},
		OwnerReferences: []metav1.OwnerReference{owner}}}
	if instance != "" {
		p.Labels[tkestackv1.TAppInstanceKey] = instance
	}
	return p
}

func TestClassifyPods(t *testing.T) {
	app := newApp(3).Obj()
	mine := OwnerReference(app)
	other := mine
	other.UID = "other"
	notController := mine
	notController.Controller = ptr.To(false)
	otherNS := ownedPod("web-5", "5", mine)
	otherNS.Namespace = "elsewhere"
	pods := []*corev1.Pod{
		ownedPod("web-0", "0", mine),
		ownedPod("web-1", "2", mine),  // label disagrees: malformed, name of 1 taken
		ownedPod("web-01", "1", mine), // non-canonical id: malformed
		ownedPod("web-3", "", mine),   // no label: malformed, name of 3 taken
		ownedPod("web-4", "4", other), // another controller: ignored
		ownedPod("web-6", "6", notController),
		ownedPod("webx-7", "7", mine),  // other name prefix: malformed
		ownedPod("web-10", "10", mine), // out of range, well-formed
		otherNS,
		nil,
	}
	got := ClassifyPods(app, pods)
	names := func(ps []*corev1.Pod) []string {
		var out []string
		for _, p := range ps {
			out = append(out, p.Name)
		}
		return out
	}
	if diff := cmp.Diff([]int{0, 10}, got.Pods.IDs()); diff != "" {
		t.Errorf("well-formed ids (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"web-01", "web-1", "web-3", "webx-7"}, names(got.Malformed)); diff != "" {
		t.Errorf("malformed (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[int]bool{1: true, 3: true}, got.NameTaken); diff != "" {
		t.Errorf("name taken (-want +got):\n%s", diff)
	}
}

func TestAdoptAndRelease(t *testing.T) {
	app := newApp(3).Obj()
	sel := labels.SelectorFromSet(labels.Set{"app": "web"})
	orphan := func(name, id string, mod ...func(*corev1.Pod)) *corev1.Pod {
		p := ownedPod(name, id, metav1.OwnerReference{})
		p.OwnerReferences = nil
		for _, m := range mod {
			m(p)
		}
		return p
	}
	adopt := map[string]struct {
		pod  *corev1.Pod
		sel  labels.Selector
		want bool
	}{
		"matching orphan":      {pod: orphan("web-1", "1"), sel: sel, want: true},
		"out of range is fine": {pod: orphan("web-9", "9"), sel: sel, want: true},
		"name mismatch":        {pod: orphan("web-2", "1"), sel: sel},
		"non-canonical label":  {pod: orphan("web-01", "01"), sel: sel},
		"no label":             {pod: orphan("web-1", ""), sel: sel},
		"selector mismatch":    {pod: orphan("web-1", "1", func(p *corev1.Pod) { p.Labels["app"] = "x" }), sel: sel},
		"has a controller":     {pod: ownedPod("web-1", "1", OwnerReference(app)), sel: sel},
		"terminating":          {pod: orphan("web-1", "1", func(p *corev1.Pod) { p.DeletionTimestamp = &mt0 }), sel: sel},
		"other namespace":      {pod: orphan("web-1", "1", func(p *corev1.Pod) { p.Namespace = "x" }), sel: sel},
		"nil selector":         {pod: orphan("web-1", "1")},
		"empty selector":       {pod: orphan("web-1", "1"), sel: labels.Everything()},
	}
	for name, tc := range adopt {
		t.Run("adopt/"+name, func(t *testing.T) {
			if got := CanAdopt(app, tc.sel, tc.pod); got != tc.want {
				t.Errorf("CanAdopt = %v, want %v", got, tc.want)
			}
		})
	}
	owned := ownedPod("web-1", "1", OwnerReference(app))
	moved := owned.DeepCopy()
	moved.Labels["app"] = "other"
	if ShouldRelease(app, sel, owned) || !ShouldRelease(app, sel, moved) || ShouldRelease(app, nil, moved) {
		t.Error("ShouldRelease: want release only for an owned pod that no longer matches a valid selector")
	}
}
