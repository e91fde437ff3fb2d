package testutil

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	openyurtv1beta1 "github.com/drover-dev/drover/api/openyurt/apps/v1beta1"
)

// NodeWrapper builds a Node.
type NodeWrapper struct{ corev1.Node }

// MakeNode starts a Node with the given name, no labels and no conditions.
func MakeNode(name string) *NodeWrapper {
	return &NodeWrapper{corev1.Node{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Node"},
		ObjectMeta: metav1.ObjectMeta{Name: name},
	}}
}

// Obj returns a copy of the Node built so far.
func (w *NodeWrapper) Obj() *corev1.Node { return w.DeepCopy() }

// Pool sets the membership label apps.openyurt.io/nodepool.
func (w *NodeWrapper) Pool(pool string) *NodeWrapper {
	return w.Label(openyurtv1beta1.LabelCurrentNodePool, pool)
}

// DesiredPool sets the label apps.openyurt.io/desired-nodepool.
func (w *NodeWrapper) DesiredPool(pool string) *NodeWrapper {
	return w.Label(openyurtv1beta1.LabelDesiredNodePool, pool)
}

// Label sets one label.
func (w *NodeWrapper) Label(k, v string) *NodeWrapper {
	w.ObjectMeta.Labels = mergeMap(w.ObjectMeta.Labels, map[string]string{k: v})
	return w
}

// Labels adds labels.
func (w *NodeWrapper) Labels(l map[string]string) *NodeWrapper {
	w.ObjectMeta.Labels = mergeMap(w.ObjectMeta.Labels, l)
	return w
}

// Annotations adds annotations.
func (w *NodeWrapper) Annotations(a map[string]string) *NodeWrapper {
	w.ObjectMeta.Annotations = mergeMap(w.ObjectMeta.Annotations, a)
	return w
}

// Taints appends taints.
func (w *NodeWrapper) Taints(t ...corev1.Taint) *NodeWrapper {
	w.Spec.Taints = append(w.Spec.Taints, copyTaints(t)...)
	return w
}

// Ready sets the Ready condition to True or False, replacing any Ready condition.
func (w *NodeWrapper) Ready(ready bool) *NodeWrapper {
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	return w.Condition(corev1.NodeReady, status)
}

// Condition sets a node condition of the given type and status, replacing one of the same type.
func (w *NodeWrapper) Condition(t corev1.NodeConditionType, s corev1.ConditionStatus) *NodeWrapper {
	c := corev1.NodeCondition{Type: t, Status: s, Reason: "Test", LastTransitionTime: metav1.Now(), LastHeartbeatTime: metav1.Now()}
	for i := range w.Status.Conditions {
		if w.Status.Conditions[i].Type == t {
			w.Status.Conditions[i] = c
			return w
		}
	}
	w.Status.Conditions = append(w.Status.Conditions, c)
	return w
}

// ResourceVersion sets metadata.resourceVersion.
func (w *NodeWrapper) ResourceVersion(rv string) *NodeWrapper {
	w.ObjectMeta.ResourceVersion = rv
	return w
}
