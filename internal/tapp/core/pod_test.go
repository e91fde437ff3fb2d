package core

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	tkestackv1 "github.com/drover-dev/drover/api/tkestack/apps/v1"
)

func TestNewPod(t *testing.T) {
	b := newApp(3).Mutate(func(a *tkestackv1.TApp) {
		a.Spec.ServiceName = "nginx"
		a.Spec.Template.Annotations = map[string]string{"note": "x"}
		a.Spec.Template.Finalizers = []string{"example.com/f"}
		a.Spec.Template.Spec.Volumes = []corev1.Volume{
			{Name: "cache", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
			{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
		}
		a.Spec.VolumeClaimTemplates = []corev1.PersistentVolumeClaim{
			{ObjectMeta: metav1.ObjectMeta{Name: "logs"}}, {ObjectMeta: metav1.ObjectMeta{Name: "data"}},
		}
	})
	p := passOf(b)
	before := p.App.DeepCopy()
	tpl, _ := p.Template(2)
	got := NewPod(p.App, 2, tpl)
	want := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: "web-2", Namespace: testNS,
			Labels: map[string]string{"app": "web", tkestackv1.TAppInstanceKey: "2",
				tkestackv1.TAppHashKey: tpl.Hash, tkestackv1.TAppUniqHashKey: tpl.UniqHash},
			Annotations: map[string]string{"note": "x"},
			Finalizers:  []string{"example.com/f"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps.tkestack.io/v1", Kind: "TApp", Name: testName,
				UID: testUID, Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}},
		},
		Spec: corev1.PodSpec{
			Containers:     []corev1.Container{{Name: "nginx", Image: oldImage}},
			ReadinessGates: []corev1.PodReadinessGate{{ConditionType: tkestackv1.InPlaceUpdateReady}},
			Hostname:       "web-2",
			Subdomain:      "nginx",
			Volumes: []corev1.Volume{
				{Name: "cache", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
				{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data-web-2"}}},
				{Name: "logs", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "logs-web-2"}}},
			},
		},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("pod (-want +got):\n%s", diff)
	}
	// The shared template is never mutated, and the pod shares no memory with it.
	got.Labels["x"], got.Annotations["x"], got.Finalizers[0] = "1", "1", "changed"
	got.Spec.Containers[0].Image = "changed"
	if diff := cmp.Diff(before, p.App); diff != "" {
		t.Errorf("TApp modified (-before +after):\n%s", diff)
	}
}

func TestNewPodGateAndServiceName(t *testing.T) {
	p := passOf(newApp(1).Mutate(func(a *tkestackv1.TApp) {
		a.Spec.Template.Spec.ReadinessGates = []corev1.PodReadinessGate{{ConditionType: "other"}, {ConditionType: tkestackv1.InPlaceUpdateReady}}
		a.Spec.Template.Spec.Hostname, a.Spec.Template.Spec.Subdomain = "h", "s"
		a.Spec.Template.Labels[tkestackv1.TAppInstanceKey] = "99"
	}))
	tpl, _ := p.Template(0)
	got := NewPod(p.App, 0, tpl)
	if len(got.Spec.ReadinessGates) != 2 {
		t.Errorf("the gate must not be duplicated: %v", got.Spec.ReadinessGates)
	}
	if got.Spec.Hostname != "h" || got.Spec.Subdomain != "s" {
		t.Error("without serviceName the template's hostname/subdomain stay")
	}
	if got.Labels[tkestackv1.TAppInstanceKey] != "0" {
		t.Error("the instance label overrides the template's")
	}
}

func TestShouldForceDelete(t *testing.T) {
	node := func(conds ...corev1.NodeCondition) *corev1.Node {
		return &corev1.Node{Status: corev1.NodeStatus{Conditions: conds}}
	}
	ready := func(s corev1.ConditionStatus) corev1.NodeCondition {
		return corev1.NodeCondition{Type: corev1.NodeReady, Status: s}
	}
	p := passOf(newApp(1))
	term := runningPod(p, 0, terminating)
	unbound := runningPod(p, 0, terminating, func(p *corev1.Pod) { p.Spec.NodeName = "" })
	tests := map[string]struct {
		flag bool
		pod  *corev1.Pod
		node *corev1.Node
		want bool
	}{
		"node absent":        {flag: true, pod: term, want: true},
		"node not ready":     {flag: true, pod: term, node: node(ready(corev1.ConditionFalse)), want: true},
		"node unknown":       {flag: true, pod: term, node: node(ready(corev1.ConditionUnknown)), want: true},
		"node ready":         {flag: true, pod: term, node: node(ready(corev1.ConditionTrue))},
		"node without Ready": {flag: true, pod: term, node: node(corev1.NodeCondition{Type: "Other", Status: "False"})},
		"flag off":           {pod: term},
		"not terminating":    {flag: true, pod: runningPod(p, 0)},
		"not bound":          {flag: true, pod: unbound},
		"nil pod":            {flag: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := shouldForceDelete(tc.flag, tc.pod, tc.node); got != tc.want {
				t.Errorf("ShouldForceDelete = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestViewHelpers(t *testing.T) {
	p := passOf(newApp(1))
	pod := runningPod(p, 0)
	created := AfterCreate(pod)
	if created.Status.Phase != corev1.PodPending || len(created.Status.Conditions) != 0 || pod.Status.Phase != corev1.PodRunning {
		t.Errorf("AfterCreate: %+v", created.Status)
	}
	gated := WithGate(created, corev1.ConditionTrue, t0)
	if c := GateCondition(gated); c == nil || c.Status != corev1.ConditionTrue || GateCondition(created) != nil {
		t.Error("WithGate must add the condition to a copy")
	}
	later := t0.Add(5e9)
	same := WithGate(gated, corev1.ConditionTrue, later)
	if !GateCondition(same).LastTransitionTime.Time.Equal(t0) {
		t.Error("an unchanged gate keeps its transition time")
	}
	flipped := WithGate(gated, corev1.ConditionFalse, later)
	if c := GateCondition(flipped); c.Status != corev1.ConditionFalse || !c.LastTransitionTime.Time.Equal(later) {
		t.Errorf("flipped gate: %+v", c)
	}
	deleted := AfterGracefulDelete(pod, t0)
	if deleted.DeletionTimestamp == nil || pod.DeletionTimestamp != nil {
		t.Error("AfterGracefulDelete must mark a copy terminating")
	}
}
