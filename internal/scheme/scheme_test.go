package scheme_test

import (
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/drover-dev/drover/internal/scheme"
)

// TestNewKnowsEveryServedKind: the shared scheme recognizes every kind drover serves, and the built-ins.
func TestNewKnowsEveryServedKind(t *testing.T) {
	s := scheme.New()
	for _, gvk := range []schema.GroupVersionKind{
		{Group: "apps.openyurt.io", Version: "v1beta1", Kind: "NodePool"},
		{Group: "apps.openyurt.io", Version: "v1alpha1", Kind: "YurtAppDaemon"},
		{Group: "apps.openyurt.io", Version: "v1alpha1", Kind: "UnitedDaemonSet"},
		{Group: "apps.tkestack.io", Version: "v1", Kind: "TApp"},
		{Group: "apps.kruise.io", Version: "v1alpha1", Kind: "PersistentPodState"},
		{Group: "apps.kruise.io", Version: "v1alpha1", Kind: "PersistentPodStateList"},
		{Group: "community.kubestellar.io", Version: "v1alpha1", Kind: "StagedBindingPolicy"},
		{Group: "control.kubestellar.io", Version: "v1alpha1", Kind: "BindingPolicy"},
		{Group: "control.kubestellar.io", Version: "v1alpha1", Kind: "Binding"},
		{Group: "control.kubestellar.io", Version: "v1alpha1", Kind: "CombinedStatus"},
		{Group: "apps", Version: "v1", Kind: "StatefulSet"},
	} {
		if !s.Recognizes(gvk) {
			t.Errorf("the scheme does not recognize %s", gvk)
		}
	}
}
