package render

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	openyurtv1alpha1 "github.com/drover-dev/drover/api/openyurt/apps/v1alpha1"
)

func TestAdapterFor(t *testing.T) {
	cases := map[string]struct {
		kind      openyurtv1alpha1.TemplateType
		gvk       string
		limit     int
		obj, list any
	}{
		"Deployment":  {deploy, "apps/v1, Kind=Deployment", 242, &appsv1.Deployment{}, &appsv1.DeploymentList{}},
		"StatefulSet": {sts, "apps/v1, Kind=StatefulSet", 52, &appsv1.StatefulSet{}, &appsv1.StatefulSetList{}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			a, ok := AdapterFor(tc.kind)
			if !ok {
				t.Fatal("no adapter")
			}
			if a.Kind() != tc.kind || a.GVK().String() != tc.gvk || a.NameLimit() != tc.limit {
				t.Errorf("adapter %s %s %d", a.Kind(), a.GVK(), a.NameLimit())
			}
			if diff := cmp.Diff(tc.obj, any(a.NewObject())); diff != "" {
				t.Errorf("NewObject (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.list, any(a.NewList())); diff != "" {
				t.Errorf("NewList (-want +got):\n%s", diff)
			}
		})
	}
	if _, ok := AdapterFor("DaemonSet"); ok {
		t.Errorf("adapter for DaemonSet")
	}
	if len(Adapters()) != 2 {
		t.Errorf("Adapters() = %v", Adapters())
	}
}

func TestAdapterItems(t *testing.T) {
	dl := &appsv1.DeploymentList{Items: []appsv1.Deployment{{ObjectMeta: metav1.ObjectMeta{Name: "a"}}, {ObjectMeta: metav1.ObjectMeta{Name: "b"}}}}
	sl := &appsv1.StatefulSetList{Items: []appsv1.StatefulSet{{ObjectMeta: metav1.ObjectMeta{Name: "c"}}}}
	names := func(objs []client.Object) []string {
		var out []string
		for _, o := range objs {
			out = append(out, o.GetName())
		}
		return out
	}
	d, _ := AdapterFor(deploy)
	s, _ := AdapterFor(sts)
	if diff := cmp.Diff([]string{"a", "b"}, names(d.Items(dl))); diff != "" {
		t.Errorf("Deployment items (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"c"}, names(s.Items(sl))); diff != "" {
		t.Errorf("StatefulSet items (-want +got):\n%s", diff)
	}
	if d.Items(sl) != nil || s.Items(dl) != nil {
		t.Errorf("items of the wrong list type")
	}
	d.Items(dl)[0].SetName("changed")
	if dl.Items[0].Name != "changed" {
		t.Errorf("items are copies, want pointers into the list")
	}
}

func TestDeploymentSummary(t *testing.T) {
	mk := func(gen, observed int64, replicas *int32, ready, updated int32, rev string, avail corev1.ConditionStatus) *appsv1.Deployment {
		d := &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Generation: gen, Labels: map[string]string{openyurtv1alpha1.LabelControllerRevisionHash: rev}},
			Spec:       appsv1.DeploymentSpec{Replicas: replicas},
			Status:     appsv1.DeploymentStatus{ObservedGeneration: observed, ReadyReplicas: ready, UpdatedReplicas: updated},
		}
		if avail != "" {
			d.Status.Conditions = []appsv1.DeploymentCondition{{Type: appsv1.DeploymentAvailable, Status: avail}}
		}
		return d
	}
	cases := map[string]struct {
		obj  client.Object
		want Summary
	}{
		"ready and updated": {
			obj:  mk(2, 2, ptr.To[int32](3), 3, 3, "rev-2", corev1.ConditionTrue),
			want: Summary{Replicas: 3, ReadyReplicas: 3, Available: "True", Ready: true, Updated: true},
		},
		"old revision": {
			obj:  mk(2, 2, ptr.To[int32](3), 3, 3, "rev-1", corev1.ConditionTrue),
			want: Summary{Replicas: 3, ReadyReplicas: 3, Available: "True", Ready: true},
		},
		"stale status": {
			obj:  mk(3, 2, ptr.To[int32](3), 3, 3, "rev-2", corev1.ConditionFalse),
			want: Summary{Replicas: 3, ReadyReplicas: 3, Available: "False"},
		},
		"rolling out, no condition, nil replicas": {
			obj:  mk(1, 1, nil, 0, 0, "rev-2", ""),
			want: Summary{Replicas: 1, Available: "Unknown"},
		},
		"wrong type": {obj: &appsv1.StatefulSet{}, want: Summary{Available: "Unknown"}},
	}
	a, _ := AdapterFor(deploy)
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, a.Summary(tc.obj, "rev-2")); diff != "" {
				t.Errorf("Summary (-want +got):\n%s", diff)
			}
		})
	}
}

func TestStatefulSetSummary(t *testing.T) {
	mk := func(gen, observed int64, replicas, ready, avail, updated int32, rev string) *appsv1.StatefulSet {
		return &appsv1.StatefulSet{
			ObjectMeta: metav1.ObjectMeta{Generation: gen, Labels: map[string]string{openyurtv1alpha1.LabelControllerRevisionHash: rev}},
			Spec:       appsv1.StatefulSetSpec{Replicas: ptr.To(replicas)},
			Status: appsv1.StatefulSetStatus{
				ObservedGeneration: observed, ReadyReplicas: ready, AvailableReplicas: avail, UpdatedReplicas: updated,
			},
		}
	}
	cases := map[string]struct {
		obj  client.Object
		want Summary
	}{
		"ready and updated": {
			obj:  mk(1, 1, 2, 2, 2, 2, "rev-2"),
			want: Summary{Replicas: 2, ReadyReplicas: 2, Available: "True", Ready: true, Updated: true},
		},
		"partly available": {
			obj:  mk(1, 1, 2, 2, 1, 1, "rev-2"),
			want: Summary{Replicas: 2, ReadyReplicas: 2, Available: "False", Ready: true},
		},
		"stale status": {
			obj:  mk(2, 1, 2, 2, 2, 2, "rev-2"),
			want: Summary{Replicas: 2, ReadyReplicas: 2, Available: "True"},
		},
		"wrong type": {obj: &appsv1.Deployment{}, want: Summary{Available: "Unknown"}},
	}
	a, _ := AdapterFor(sts)
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, a.Summary(tc.obj, "rev-2")); diff != "" {
				t.Errorf("Summary (-want +got):\n%s", diff)
			}
		})
	}
}

func TestImmutableChanges(t *testing.T) {
	path := field.NewPath("spec", "workloadTemplate")
	cases := map[string]struct {
		edit    func(s *appsv1.StatefulSetSpec)
		changed string
	}{
		"mutable fields": {edit: func(s *appsv1.StatefulSetSpec) {
			s.Replicas = ptr.To[int32](9)
			s.Template.Spec.Containers[0].Image = "nginx:9"
			s.UpdateStrategy.Type = appsv1.OnDeleteStatefulSetStrategyType
			s.RevisionHistoryLimit = ptr.To[int32](1)
			s.MinReadySeconds = 5
			s.Ordinals = &appsv1.StatefulSetOrdinals{Start: 1}
			s.PersistentVolumeClaimRetentionPolicy = &appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy{WhenDeleted: appsv1.DeletePersistentVolumeClaimRetentionPolicyType}
			s.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"x": "y"}} // the selector check's
		}},
		"serviceName": {edit: func(s *appsv1.StatefulSetSpec) { s.ServiceName = "other" }, changed: "serviceName"},
		"two fields": {edit: func(s *appsv1.StatefulSetSpec) {
			s.PodManagementPolicy = appsv1.OrderedReadyPodManagement
			s.VolumeClaimTemplates = []corev1.PersistentVolumeClaim{{ObjectMeta: metav1.ObjectMeta{Name: "d"}}}
		}, changed: "volumeClaimTemplates, podManagementPolicy"},
	}
	a, _ := AdapterFor(sts)
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			oldSpec, newSpec := stsSpec(), stsSpec()
			tc.edit(&newSpec.WorkloadTemplate.StatefulSetTemplate.Spec)
			errs := a.ImmutableChanges(&oldSpec.WorkloadTemplate, &newSpec.WorkloadTemplate, path)
			if tc.changed == "" {
				if len(errs) != 0 {
					t.Errorf("errors %v", errs)
				}
				return
			}
			if len(errs) != 1 || errs[0].Type != field.ErrorTypeForbidden ||
				errs[0].Field != "spec.workloadTemplate.statefulSetTemplate.spec" || !strings.Contains(errs[0].Detail, "(changed: "+tc.changed+")") {
				t.Errorf("errors %v", errs)
			}
		})
	}
	d, _ := AdapterFor(deploy)
	oldSpec, newSpec := deploySpec(), deploySpec()
	newSpec.WorkloadTemplate.DeploymentTemplate.Spec.MinReadySeconds = 3
	newSpec.WorkloadTemplate.DeploymentTemplate.Spec.Strategy.Type = appsv1.RecreateDeploymentStrategyType
	if errs := d.ImmutableChanges(&oldSpec.WorkloadTemplate, &newSpec.WorkloadTemplate, path); len(errs) != 0 {
		t.Errorf("Deployment errors %v", errs)
	}
	if errs := a.ImmutableChanges(&oldSpec.WorkloadTemplate, &newSpec.WorkloadTemplate, path); len(errs) != 0 {
		t.Errorf("StatefulSet adapter on Deployment templates: %v", errs)
	}
}
