// Package scheme builds the runtime.Scheme that drover's manager, tests and tools share.
package scheme

import (
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
)

// New returns a scheme holding the Kubernetes built-in types and every API package the registry's
// controllers serve or read (addAPIs, generated from their descriptions by hack/registrygen).
func New() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(s))
	addAPIs(s)
	return s
}
