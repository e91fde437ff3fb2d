package testutil

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	openyurtv1beta1 "github.com/drover-dev/drover/api/openyurt/apps/v1beta1"
)

func TestMakeNode(t *testing.T) {
	b := MakeNode("n").Pool("p").DesiredPool("q").Labels(map[string]string{"a": "1"}).
		Annotations(map[string]string{"x": "y"}).Taints(corev1.Taint{Key: "k", Effect: corev1.TaintEffectNoSchedule})
	notReady := b.Ready(false).Obj()
	ready := b.Ready(true).Obj()

	wantLabels := map[string]string{openyurtv1beta1.LabelCurrentNodePool: "p", openyurtv1beta1.LabelDesiredNodePool: "q", "a": "1"}
	if diff := cmp.Diff(wantLabels, ready.Labels); diff != "" {
		t.Errorf("labels (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]string{"x": "y"}, ready.Annotations); diff != "" {
		t.Errorf("annotations (-want +got):\n%s", diff)
	}
	if len(ready.Spec.Taints) != 1 || ready.Spec.Taints[0].Key != "k" {
		t.Errorf("taints = %v, want one taint k", ready.Spec.Taints)
	}
	status := func(n *corev1.Node) []corev1.ConditionStatus {
		var out []corev1.ConditionStatus
		for _, c := range n.Status.Conditions {
			out = append(out, c.Status)
		}
		return out
	}
	// Ready replaces the condition; an object returned earlier is not affected by later calls.
	if diff := cmp.Diff([]corev1.ConditionStatus{corev1.ConditionTrue}, status(ready)); diff != "" {
		t.Errorf("ready conditions (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]corev1.ConditionStatus{corev1.ConditionFalse}, status(notReady)); diff != "" {
		t.Errorf("earlier object changed (-want +got):\n%s", diff)
	}
	if got := MakeNode("bare").Obj(); got.Labels != nil || len(got.Status.Conditions) != 0 {
		t.Errorf("MakeNode sets more than the name: %+v", got)
	}
}

func TestMakeNodePool(t *testing.T) {
	labels := map[string]string{"region": "east"}
	b := MakeNodePool("p").Type(openyurtv1beta1.Cloud).Labels(labels).
		Annotations(map[string]string{"x": "y"}).Taints(corev1.Taint{Key: "k", Effect: corev1.TaintEffectNoSchedule}).
		ObjectLabels(map[string]string{"tier": "gold"})
	got := b.Obj()
	labels["region"] = "changed" // the builder holds its own copy

	want := &openyurtv1beta1.NodePool{}
	want.APIVersion, want.Kind, want.Name = "apps.openyurt.io/v1beta1", "NodePool", "p"
	want.Labels = map[string]string{"tier": "gold"}
	want.Spec = openyurtv1beta1.NodePoolSpec{
		Type: openyurtv1beta1.Cloud, Labels: map[string]string{"region": "east"}, Annotations: map[string]string{"x": "y"},
		Taints: []corev1.Taint{{Key: "k", Effect: corev1.TaintEffectNoSchedule}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("pool (-want +got):\n%s", diff)
	}
	if d := b.Deleting().Obj(); d.DeletionTimestamp == nil || len(d.Finalizers) == 0 {
		t.Errorf("Deleting() = %v, %v; want a deletion timestamp and a finalizer", d.DeletionTimestamp, d.Finalizers)
	}
	if got.DeletionTimestamp != nil {
		t.Errorf("an earlier Obj() changed with the builder")
	}
}

func TestMakeTApp(t *testing.T) {
	lbls := map[string]string{"app": "web"}
	b := MakeTApp("web", "ns").Replicas(3).Template(PodTemplate(lbls, "nginx:1")).Killed("1").VolumeClaim("data", "1Gi")
	app := b.Obj()
	if app.Spec.Replicas != 3 || app.Spec.Selector == nil || app.Spec.Selector.MatchLabels["app"] != "web" {
		t.Errorf("spec: %+v", app.Spec)
	}
	if app.Spec.Statuses["1"] != "Killed" || len(app.Spec.VolumeClaimTemplates) != 1 {
		t.Errorf("statuses %v, claims %d", app.Spec.Statuses, len(app.Spec.VolumeClaimTemplates))
	}
	// Obj returns a copy: later calls do not change it.
	b.Image("nginx:2")
	if got := app.Spec.Template.Spec.Containers[0].Image; got != "nginx:1" {
		t.Errorf("earlier object changed: %s", got)
	}
	if got := b.Obj().Spec.Template.Spec.Containers[0].Image; got != "nginx:2" {
		t.Errorf("image = %s", got)
	}
}
