package membership

import (
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-dev/drover/internal/index"

	openyurtv1beta2 "github.com/drover-dev/drover/api/openyurt/apps/v1beta2"
)

// Field index keys on Nodes: the controller and the NodePool webhook read the nodes of one pool from the
// cache through them, never every node. Tests build their fake clients with the same keys and functions
// (see Indexes), so a change here cannot leave them behind.
const (
	// IndexNodeMembership indexes Nodes by the value of the membership label apps.openyurt.io/nodepool.
	IndexNodeMembership = "drover.dev/node-membership"
	// IndexNodeDesiredPool indexes Nodes by the value of the label apps.openyurt.io/desired-nodepool.
	IndexNodeDesiredPool = "drover.dev/node-desired-pool"
	// IndexNodeStaleAttributes indexes, under StaleAttributesValue, the Nodes that carry the previous-attributes
	// annotation but no membership label: nodes that left a pool and still hold its attributes.
	IndexNodeStaleAttributes = "drover.dev/node-stale-attributes"
	// StaleAttributesValue is the only key of IndexNodeStaleAttributes.
	StaleAttributesValue = "true"
)

// Indexes returns every index of this package. The NodePool controller's description (nodepool.Controller)
// has the manager register them; tests pass them to testutil.NewFakeClient.
func Indexes() []index.Index {
	return []index.Index{
		{Object: &corev1.Node{}, Field: IndexNodeMembership, Extract: nodeMembershipValues},
		{Object: &corev1.Node{}, Field: IndexNodeDesiredPool, Extract: nodeDesiredPoolValues},
		{Object: &corev1.Node{}, Field: IndexNodeStaleAttributes, Extract: nodeStaleAttributesValues},
	}
}

// PoolOf returns the pool a node belongs to, or "" if it belongs to none.
func PoolOf(node *corev1.Node) string {
	return node.Labels[openyurtv1beta2.LabelCurrentNodePool]
}

// DesiredPoolOf returns the pool a node asks to join, or "".
func DesiredPoolOf(node *corev1.Node) string {
	return node.Labels[openyurtv1beta2.LabelDesiredNodePool]
}

// hasStaleAttributes reports whether a node holds pool attributes without belonging to a pool.
func hasStaleAttributes(node *corev1.Node) bool {
	_, recorded := node.Annotations[openyurtv1beta2.AnnotationPrevAttrs]
	return recorded && PoolOf(node) == ""
}

func nodeMembershipValues(obj client.Object) []string {
	node, ok := obj.(*corev1.Node)
	if !ok || PoolOf(node) == "" {
		return nil
	}
	return []string{PoolOf(node)}
}

func nodeDesiredPoolValues(obj client.Object) []string {
	node, ok := obj.(*corev1.Node)
	if !ok || DesiredPoolOf(node) == "" {
		return nil
	}
	return []string{DesiredPoolOf(node)}
}

func nodeStaleAttributesValues(obj client.Object) []string {
	node, ok := obj.(*corev1.Node)
	if !ok || !hasStaleAttributes(node) {
		return nil
	}
	return []string{StaleAttributesValue}
}
