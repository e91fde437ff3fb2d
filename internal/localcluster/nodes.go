package localcluster

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Labels and annotations of the fake nodes.
const (
	LabelNodePool = "apps.openyurt.io/nodepool"
	LabelZone     = "topology.kubernetes.io/zone"
	LabelHostname = "kubernetes.io/hostname"
	// AnnotationKwokNode marks the Nodes kwok manages: create a Node with kwok.x-k8s.io/node=fake and kwok
	// makes it Ready and runs the pods scheduled to it.
	AnnotationKwokNode = "kwok.x-k8s.io/node"
	// KwokNodeValue is the value of AnnotationKwokNode.
	KwokNodeValue = "fake"
)

// Pool is one of the NodePools of the local cluster.
type Pool struct {
	Name string
	// Type is the NodePool spec.type.
	Type string
	// Zone is the topology.kubernetes.io/zone of the pool's nodes: a pool is one edge region (or the cloud)
	// and lies in one zone.
	Zone string
}

// Pools are the NodePools of the local cluster. Node i belongs to Pools[i%3].
var Pools = []Pool{
	{Name: "pool-a", Type: "Edge", Zone: "zone-1"},
	{Name: "pool-b", Type: "Edge", Zone: "zone-2"},
	{Name: "pool-c", Type: "Cloud", Zone: "zone-3"},
}

// NodeSpec describes one fake node.
type NodeSpec struct {
	Name string
	Pool string
	Zone string
}

// Layout returns the fake nodes of a cluster with n nodes: node-00, node-01, ... assigned round-robin to
// Pools, so pool sizes differ by at most one.
func Layout(n int) []NodeSpec {
	width := max(len(fmt.Sprint(n-1)), 2)
	nodes := make([]NodeSpec, n)
	for i := range nodes {
		p := Pools[i%len(Pools)]
		nodes[i] = NodeSpec{Name: fmt.Sprintf("node-%0*d", width, i), Pool: p.Name, Zone: p.Zone}
	}
	return nodes
}

// FakeNode returns a Node that kwok will manage, with the pool, zone and hostname labels and a realistic
// capacity (32 CPUs, 256Gi) except for the pod count, which is large (1000) so benchmarks are not bound by it.
func FakeNode(spec NodeSpec) *corev1.Node {
	capacity := corev1.ResourceList{
		corev1.ResourceCPU:              resource.MustParse("32"),
		corev1.ResourceMemory:           resource.MustParse("256Gi"),
		corev1.ResourceEphemeralStorage: resource.MustParse("1Ti"),
		corev1.ResourcePods:             resource.MustParse("1000"),
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name: spec.Name,
			Labels: map[string]string{
				LabelNodePool:        spec.Pool,
				LabelZone:            spec.Zone,
				LabelHostname:        spec.Name,
				"kubernetes.io/os":   "linux",
				"kubernetes.io/arch": "amd64",
				"node.kubernetes.io/exclude-from-external-load-balancers": "true",
				"type": "kwok",
			},
			Annotations: map[string]string{
				AnnotationKwokNode:             KwokNodeValue,
				"node.alpha.kubernetes.io/ttl": "0",
			},
		},
		Status: corev1.NodeStatus{
			Capacity:    capacity,
			Allocatable: capacity.DeepCopy(),
			NodeInfo:    corev1.NodeSystemInfo{Architecture: "amd64", OperatingSystem: "linux"},
		},
	}
}

// nodePoolObject returns the NodePool of p as an unstructured object, so that this package does not depend
// on drover's API types (drover-local down must build even when they do not).
func nodePoolObject(p Pool) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(nodePoolGVK)
	u.SetName(p.Name)
	_ = unstructured.SetNestedField(u.Object, p.Type, "spec", "type")
	return u
}

// createNodePools creates the pools; existing ones are left alone.
func createNodePools(ctx context.Context, c client.Client) error {
	for _, p := range Pools {
		if err := c.Create(ctx, nodePoolObject(p)); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating NodePool %s: %w", p.Name, err)
		}
	}
	return nil
}

// createNodes creates the fake nodes; existing ones are left alone.
func createNodes(ctx context.Context, c client.Client, n int) error {
	for _, spec := range Layout(n) {
		if err := c.Create(ctx, FakeNode(spec)); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating node %s: %w", spec.Name, err)
		}
	}
	return nil
}

// NodeReady reports whether the node's Ready condition is True.
func NodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
