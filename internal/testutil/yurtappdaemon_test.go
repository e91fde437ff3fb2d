package testutil

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	openyurtv1alpha1 "github.com/drover-dev/drover/api/openyurt/apps/v1alpha1"
)

func TestMakeOwner(t *testing.T) {
	lbls := map[string]string{"app": "dns"}
	for _, kind := range OwnerKinds {
		t.Run(kind, func(t *testing.T) {
			b := MakeOwner(kind, "dns", "ns").UID("u").Generation(2).
				Deployment(DeploymentSpec(lbls, "dns:1")).TemplateMetadata(map[string]string{"team": "x"}, nil).
				NodePoolSelectorLabels(map[string]string{"tier": "edge"}).RevisionHistoryLimit(3).
				Tweaks(openyurtv1alpha1.WorkloadTweak{Pools: []string{"east"}})
			first := b.Obj()
			b.StatefulSet(StatefulSetSpec(lbls, "dns:2"))
			second := b.Obj()

			if first.GetObjectKind().GroupVersionKind().Kind != kind || first.GetName() != "dns" || first.GetUID() != "u" {
				t.Errorf("identity = %v %s %s", first.GetObjectKind().GroupVersionKind(), first.GetName(), first.GetUID())
			}
			spec := first.DaemonSpec()
			if spec.TemplateType() != openyurtv1alpha1.DeploymentTemplateType || second.DaemonSpec().TemplateType() != openyurtv1alpha1.StatefulSetTemplateType {
				t.Errorf("template types %q then %q", spec.TemplateType(), second.DaemonSpec().TemplateType())
			}
			if diff := cmp.Diff(&metav1.LabelSelector{MatchLabels: lbls}, spec.Selector); diff != "" {
				t.Errorf("selector taken from the template (-want +got):\n%s", diff)
			}
			if got := second.DaemonSpec().WorkloadTemplate.StatefulSetTemplate.Labels; got["team"] != "x" {
				t.Errorf("template metadata lost when switching the member: %v", got)
			}
			if *spec.RevisionHistoryLimit != 3 || len(spec.WorkloadTweaks) != 1 || spec.NodePoolSelector.MatchLabels["tier"] != "edge" {
				t.Errorf("spec = %+v", spec)
			}
		})
	}
	yad := MakeYurtAppDaemon("a", "ns").Obj()
	uds := MakeUnitedDaemonSet("a", "ns").Obj()
	if yad.Kind != YurtAppDaemonKind || uds.Kind != UnitedDaemonSetKind {
		t.Errorf("kinds %s, %s", yad.Kind, uds.Kind)
	}
}
