// Package scheme builds the runtime.Scheme that drover's manager, tests and tools share.
package scheme

import (
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"

	kruisev1alpha1 "github.com/drover-dev/drover/api/kruise/apps/v1alpha1"
	communityv1alpha1 "github.com/drover-dev/drover/api/kubestellar/community/v1alpha1"
	controlv1alpha1 "github.com/drover-dev/drover/api/kubestellar/control/v1alpha1"
	openyurtv1alpha1 "github.com/drover-dev/drover/api/openyurt/apps/v1alpha1"
	openyurtv1beta1 "github.com/drover-dev/drover/api/openyurt/apps/v1beta1"
	tkestackv1 "github.com/drover-dev/drover/api/tkestack/apps/v1"
)

// New returns a scheme holding the Kubernetes built-in types and every API drover serves.
func New() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(s))
	utilruntime.Must(kruisev1alpha1.AddToScheme(s))
	utilruntime.Must(communityv1alpha1.AddToScheme(s))
	utilruntime.Must(controlv1alpha1.AddToScheme(s))
	utilruntime.Must(openyurtv1alpha1.AddToScheme(s))
	utilruntime.Must(openyurtv1beta1.AddToScheme(s))
	utilruntime.Must(tkestackv1.AddToScheme(s))
	return s
}
