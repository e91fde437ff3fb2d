package tapp

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tkestackv1 "github.com/drover-dev/drover/api/tkestack/apps/v1"
	"github.com/drover-dev/drover/internal/index"
)

// Field index keys on Pods. Each indexes only the pods that concern TApps, so the indexes stay
// small in a cluster with many other pods. Tests build their fake clients with the same keys and functions
// (see Indexes).
const (
	// IndexPodController indexes pods whose controller ownerReference is a TApp by that TApp's UID.
	IndexPodController = "drover.dev/tapp-controller-uid"
	// IndexOrphanPod indexes pods without a controller that carry a canonical tapp_instance_key label and are
	// named <tapp>-<that id> by <tapp>: the TApp that could adopt them.
	IndexOrphanPod = "drover.dev/tapp-orphan"
	// IndexTerminatingPodNode indexes terminating, node-bound pods controlled by a TApp by node name, so a
	// node's Ready transition or deletion finds the TApps that may force-delete them.
	IndexTerminatingPodNode = "drover.dev/tapp-terminating-node"
)

// Indexes returns every index of this package. The manager registers them from Controller; tests pass
// them to fake.ClientBuilder.WithIndex.
func Indexes() []index.Index {
	return []index.Index{
		{Object: &corev1.Pod{}, Field: IndexPodController, Extract: podControllerValues},
		{Object: &corev1.Pod{}, Field: IndexOrphanPod, Extract: orphanPodValues},
		{Object: &corev1.Pod{}, Field: IndexTerminatingPodNode, Extract: terminatingPodNodeValues},
	}
}

// tappControllerRef returns the pod's controller ownerReference when it names a TApp.
func tappControllerRef(obj metav1.Object) *metav1.OwnerReference {
	ref := metav1.GetControllerOfNoCopy(obj)
	if ref == nil || ref.Kind != "TApp" || ref.UID == "" {
		return nil
	}
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil || gv.Group != tkestackv1.GroupVersion.Group {
		return nil
	}
	return ref
}

func podControllerValues(obj client.Object) []string {
	if ref := tappControllerRef(obj); ref != nil {
		return []string{string(ref.UID)}
	}
	return nil
}

// orphanTAppName returns the name of the TApp that could adopt an orphan pod: the pod has no controller,
// carries a canonical instance label and is named <tapp>-<id>.
func orphanTAppName(pod metav1.Object) (string, bool) {
	if metav1.GetControllerOfNoCopy(pod) != nil {
		return "", false
	}
	key, ok := pod.GetLabels()[tkestackv1.TAppInstanceKey]
	if !ok {
		return "", false
	}
	if _, ok := tkestackv1.ParseInstanceID(key); !ok {
		return "", false
	}
	name, found := strings.CutSuffix(pod.GetName(), "-"+key)
	if !found || name == "" {
		return "", false
	}
	return name, true
}

func orphanPodValues(obj client.Object) []string {
	if name, ok := orphanTAppName(obj); ok {
		return []string{name}
	}
	return nil
}

func terminatingPodNodeValues(obj client.Object) []string {
	pod, ok := obj.(*corev1.Pod)
	if !ok || pod.DeletionTimestamp == nil || pod.Spec.NodeName == "" || tappControllerRef(pod) == nil {
		return nil
	}
	return []string{pod.Spec.NodeName}
}
