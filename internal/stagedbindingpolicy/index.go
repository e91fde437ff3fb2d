package stagedbindingpolicy

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	communityv1alpha1 "github.com/drover-dev/drover/api/kubestellar/community/v1alpha1"
	controlv1alpha1 "github.com/drover-dev/drover/api/kubestellar/control/v1alpha1"
	"github.com/drover-dev/drover/internal/index"
	"github.com/drover-dev/drover/internal/stagedbindingpolicy/stager"
)

// Cache field indexes of the controller: a pass lists its BindingPolicies and the active stage's
// CombinedStatuses through them, never all of them.
const (
	// IndexBindingPolicyController indexes BindingPolicies by the UID of their controller (a
	// StagedBindingPolicy for those drover made).
	IndexBindingPolicyController = "sbp.controllerUID"
	// IndexCombinedStatusBindingPolicy indexes CombinedStatuses by their binding-policy label.
	IndexCombinedStatusBindingPolicy = "sbp.bindingPolicy"
	// IndexPolicyBindingPolicyNames indexes StagedBindingPolicies by the names their stages give their
	// BindingPolicies.
	IndexPolicyBindingPolicyNames = "sbp.bindingPolicyNames"
)

// combinedStatusObject is the type CombinedStatuses are cached and read as: unstructured, so that the CEL
// expressions read the cache's own content with no conversion.
func combinedStatusObject() *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(controlv1alpha1.GroupVersion.WithKind("CombinedStatus"))
	return u
}

// combinedStatusListObject is the list type of combinedStatusObject.
func combinedStatusListObject() *unstructured.UnstructuredList {
	u := &unstructured.UnstructuredList{}
	u.SetGroupVersionKind(controlv1alpha1.GroupVersion.WithKind("CombinedStatusList"))
	return u
}

// Indexes are the controller's cache field indexes.
func Indexes() []index.Index {
	return []index.Index{
		{Object: &controlv1alpha1.BindingPolicy{}, Field: IndexBindingPolicyController, Extract: index.ControllerUIDValues},
		{Object: combinedStatusObject(), Field: IndexCombinedStatusBindingPolicy, Extract: combinedStatusBindingPolicy},
		{Object: &communityv1alpha1.StagedBindingPolicy{}, Field: IndexPolicyBindingPolicyNames, Extract: stageBindingPolicyNames},
	}
}

func combinedStatusBindingPolicy(obj client.Object) []string {
	if name := obj.GetLabels()[controlv1alpha1.LabelCombinedStatusBindingPolicy]; name != "" {
		return []string{name}
	}
	return nil
}

func stageBindingPolicyNames(obj client.Object) []string {
	sbp, ok := obj.(*communityv1alpha1.StagedBindingPolicy)
	if !ok {
		return nil
	}
	out := make([]string, 0, len(sbp.Spec.Stages))
	for _, s := range sbp.Spec.Stages {
		out = append(out, stager.BindingPolicyName(sbp.Name, s.Name))
	}
	return out
}
