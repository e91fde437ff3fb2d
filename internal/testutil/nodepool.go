package testutil

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	openyurtv1beta1 "github.com/drover-dev/drover/api/openyurt/apps/v1beta1"
)

// NodePoolWrapper builds a NodePool.
type NodePoolWrapper struct{ openyurtv1beta1.NodePool }

// MakeNodePool starts a NodePool with the given name and nothing else set (no type: defaulting sets it).
func MakeNodePool(name string) *NodePoolWrapper {
	return &NodePoolWrapper{openyurtv1beta1.NodePool{
		TypeMeta:   metav1.TypeMeta{APIVersion: openyurtv1beta1.GroupVersion.String(), Kind: "NodePool"},
		ObjectMeta: metav1.ObjectMeta{Name: name},
	}}
}

// Obj returns a copy of the NodePool built so far.
func (w *NodePoolWrapper) Obj() *openyurtv1beta1.NodePool { return w.DeepCopy() }

// Type sets spec.type.
func (w *NodePoolWrapper) Type(t openyurtv1beta1.NodePoolType) *NodePoolWrapper {
	w.Spec.Type = t
	return w
}

// HostNetwork sets spec.hostNetwork.
func (w *NodePoolWrapper) HostNetwork(b bool) *NodePoolWrapper {
	w.Spec.HostNetwork = b
	return w
}

// Labels sets spec.labels (the labels pushed to members), replacing earlier ones.
func (w *NodePoolWrapper) Labels(l map[string]string) *NodePoolWrapper {
	w.Spec.Labels = copyMap(l)
	return w
}

// Annotations sets spec.annotations (the annotations pushed to members), replacing earlier ones.
func (w *NodePoolWrapper) Annotations(a map[string]string) *NodePoolWrapper {
	w.Spec.Annotations = copyMap(a)
	return w
}

// Taints sets spec.taints, replacing earlier ones.
func (w *NodePoolWrapper) Taints(t ...corev1.Taint) *NodePoolWrapper {
	w.Spec.Taints = copyTaints(t)
	return w
}

// ObjectLabels adds labels to the NodePool object itself (what owners' nodepoolSelector matches).
func (w *NodePoolWrapper) ObjectLabels(l map[string]string) *NodePoolWrapper {
	w.ObjectMeta.Labels = mergeMap(w.ObjectMeta.Labels, l)
	return w
}

// Generation sets metadata.generation.
func (w *NodePoolWrapper) Generation(g int64) *NodePoolWrapper {
	w.ObjectMeta.Generation = g
	return w
}

// Deleting marks the NodePool as being deleted, with a finalizer (the API server requires one on such objects).
func (w *NodePoolWrapper) Deleting() *NodePoolWrapper {
	now := metav1.Now()
	w.DeletionTimestamp = &now
	if len(w.Finalizers) == 0 {
		w.Finalizers = []string{"test.drover.dev/hold"}
	}
	return w
}

// Status sets the status.
func (w *NodePoolWrapper) Status(s openyurtv1beta1.NodePoolStatus) *NodePoolWrapper {
	w.NodePool.Status = *s.DeepCopy()
	return w
}
