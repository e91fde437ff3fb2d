package v1beta1

import (
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/conversion"

	openyurtv1beta2 "github.com/drover-dev/drover/api/openyurt/apps/v1beta2"
)

// v1beta1 converts to and from the hub, v1beta2, field by field; the v1beta2 fields it lacks (the election
// fields) travel in the annotation openyurtv1beta2.AnnotationConversionData (see there). spec.hostNetwork is
// kept both ways. OpenYurt's own conversion reads a v1beta1 pool's hostNetwork only from the annotation
// nodepool.openyurt.io/hostnetwork=true and loses spec.hostNetwork; drover reads either, so a v1beta1 pool
// written by OpenYurt's clients (annotation only) and one written as v1beta1 (spec only) are both hostNetwork
// pools, and reading one back in v1beta1 shows spec.hostNetwork. The result never shares a list or a map with
// the source.

var _ conversion.Convertible = &NodePool{}

// ConvertTo converts the pool into hub, a v1beta2 NodePool.
func (pool *NodePool) ConvertTo(hubRaw conversion.Hub) error {
	dst, ok := hubRaw.(*openyurtv1beta2.NodePool)
	if !ok {
		return fmt.Errorf("converting NodePool %s to the hub: unexpected type %T", pool.Name, hubRaw)
	}
	in := pool.DeepCopy()
	dst.ObjectMeta = in.ObjectMeta
	dst.SetGroupVersionKind(openyurtv1beta2.GroupVersion.WithKind("NodePool"))
	data := openyurtv1beta2.TakeConversionData(&dst.ObjectMeta)
	dst.Spec = openyurtv1beta2.NodePoolSpec{
		Type:        openyurtv1beta2.NodePoolType(in.Spec.Type),
		HostNetwork: in.Spec.HostNetwork || openyurtv1beta2.HostNetworkAnnotated(in.Annotations),
		Labels:      in.Spec.Labels, Annotations: in.Spec.Annotations, Taints: in.Spec.Taints,
	}
	if data.HostNetwork != nil {
		dst.Spec.HostNetwork = *data.HostNetwork
	}
	dst.Status = openyurtv1beta2.NodePoolStatus{
		ReadyNodeNum: in.Status.ReadyNodeNum, UnreadyNodeNum: in.Status.UnreadyNodeNum, Nodes: in.Status.Nodes}
	openyurtv1beta2.RestoreElection(dst, data)
	// What the hub carries for v1alpha1 stays with it.
	openyurtv1beta2.PutConversionData(&dst.ObjectMeta, openyurtv1beta2.ConversionData{Selector: data.Selector})
	return nil
}

// ConvertFrom converts hub, a v1beta2 NodePool, into the pool.
func (pool *NodePool) ConvertFrom(hubRaw conversion.Hub) error {
	src, ok := hubRaw.(*openyurtv1beta2.NodePool)
	if !ok {
		return fmt.Errorf("converting NodePool %s from the hub: unexpected type %T", pool.Name, hubRaw)
	}
	in, dst := src.DeepCopy(), pool
	dst.ObjectMeta = in.ObjectMeta
	dst.SetGroupVersionKind(GroupVersion.WithKind("NodePool"))
	carried := openyurtv1beta2.TakeConversionData(&dst.ObjectMeta)
	dst.Spec = NodePoolSpec{
		Type: NodePoolType(in.Spec.Type), HostNetwork: in.Spec.HostNetwork,
		Labels: in.Spec.Labels, Annotations: in.Spec.Annotations, Taints: in.Spec.Taints,
	}
	dst.Status = NodePoolStatus{
		ReadyNodeNum: in.Status.ReadyNodeNum, UnreadyNodeNum: in.Status.UnreadyNodeNum, Nodes: in.Status.Nodes}
	data := openyurtv1beta2.SpokeData(in)
	data.Selector = carried.Selector
	if readBack := in.Spec.HostNetwork || openyurtv1beta2.HostNetworkAnnotated(dst.Annotations); readBack != in.Spec.HostNetwork {
		data.HostNetwork = &in.Spec.HostNetwork
	}
	openyurtv1beta2.PutConversionData(&dst.ObjectMeta, data)
	return nil
}
