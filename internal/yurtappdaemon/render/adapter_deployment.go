package render

import (
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	openyurtv1alpha1 "github.com/drover-dev/drover/api/openyurt/apps/v1alpha1"
)

// deploymentAdapter renders one Deployment per pool.
type deploymentAdapter struct{}

var _ Adapter = deploymentAdapter{}

func (deploymentAdapter) Kind() openyurtv1alpha1.TemplateType {
	return openyurtv1alpha1.DeploymentTemplateType
}

func (deploymentAdapter) GVK() schema.GroupVersionKind {
	return appsv1.SchemeGroupVersion.WithKind("Deployment")
}

func (deploymentAdapter) NewObject() client.Object { return &appsv1.Deployment{} }

func (deploymentAdapter) NewList() client.ObjectList { return &appsv1.DeploymentList{} }

func (deploymentAdapter) Items(list client.ObjectList) []client.Object {
	if l, ok := list.(*appsv1.DeploymentList); ok {
		return objects(l.Items)
	}
	return nil
}

func (deploymentAdapter) NameLimit() int { return DeploymentNameLimit }

// Summary reads a Deployment; availableCondition is the status of its Available condition.
func (deploymentAdapter) Summary(obj client.Object, currentRevision string) Summary {
	d, ok := obj.(*appsv1.Deployment)
	if !ok || d == nil {
		return Summary{Available: "Unknown"}
	}
	replicas := ptr.Deref(d.Spec.Replicas, 1)
	s := Summary{Replicas: replicas, ReadyReplicas: d.Status.ReadyReplicas, Available: "Unknown"}
	for _, c := range d.Status.Conditions {
		if c.Type == appsv1.DeploymentAvailable {
			s.Available = conditionString(string(c.Status))
		}
	}
	current := d.Status.ObservedGeneration >= d.Generation
	s.Ready = current && d.Status.ReadyReplicas == replicas
	s.Updated = current && currentRevision != "" &&
		d.Labels[openyurtv1alpha1.LabelControllerRevisionHash] == currentRevision &&
		d.Status.UpdatedReplicas == replicas
	return s
}

// ImmutableChanges: Kubernetes lets every Deployment spec field change except the selector.
func (deploymentAdapter) ImmutableChanges(_, _ *openyurtv1alpha1.WorkloadTemplate, _ *field.Path) field.ErrorList {
	return nil
}
