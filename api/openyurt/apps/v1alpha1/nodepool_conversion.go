package v1alpha1

import (
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/conversion"

	openyurtv1beta2 "github.com/drover-dev/drover/api/openyurt/apps/v1beta2"
)

// v1alpha1 converts to and from the hub, v1beta2, as OpenYurt does for the fields both have: a hostNetwork
// pool is one whose annotation nodepool.openyurt.io/hostnetwork is "true" (in any case), and the conversion
// from the hub sets that annotation on a hostNetwork pool. What either side lacks travels in the annotation
// openyurtv1beta2.AnnotationConversionData (see there): the election fields of v1beta2 in a v1alpha1 object,
// and v1alpha1's spec.selector in the later versions (OpenYurt drops it). The result never shares a list or
// a map with the source.

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
		HostNetwork: openyurtv1beta2.HostNetworkAnnotated(dst.Annotations),
		Labels:      in.Spec.Labels, Annotations: in.Spec.Annotations, Taints: in.Spec.Taints,
	}
	if data.HostNetwork != nil {
		dst.Spec.HostNetwork = *data.HostNetwork
	}
	if data.AddedHostNetworkAnnotation {
		delete(dst.Annotations, openyurtv1beta2.LabelNodePoolHostNetwork)
		if len(dst.Annotations) == 0 {
			dst.Annotations = nil
		}
	}
	dst.Status = openyurtv1beta2.NodePoolStatus{
		ReadyNodeNum: in.Status.ReadyNodeNum, UnreadyNodeNum: in.Status.UnreadyNodeNum, Nodes: in.Status.Nodes}
	openyurtv1beta2.RestoreElection(dst, data)
	openyurtv1beta2.PutConversionData(&dst.ObjectMeta, openyurtv1beta2.ConversionData{Selector: in.Spec.Selector})
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
		Type: NodePoolType(in.Spec.Type), Selector: carried.Selector,
		Labels: in.Spec.Labels, Annotations: in.Spec.Annotations, Taints: in.Spec.Taints,
	}
	dst.Status = NodePoolStatus{
		ReadyNodeNum: in.Status.ReadyNodeNum, UnreadyNodeNum: in.Status.UnreadyNodeNum, Nodes: in.Status.Nodes}
	data := openyurtv1beta2.SpokeData(in)
	if in.Spec.HostNetwork && !openyurtv1beta2.HostNetworkAnnotated(dst.Annotations) {
		_, present := dst.Annotations[openyurtv1beta2.LabelNodePoolHostNetwork]
		data.AddedHostNetworkAnnotation = !present
		if dst.Annotations == nil {
			dst.Annotations = map[string]string{}
		}
		dst.Annotations[openyurtv1beta2.LabelNodePoolHostNetwork] = "true"
	}
	if readBack := openyurtv1beta2.HostNetworkAnnotated(dst.Annotations); readBack != in.Spec.HostNetwork {
		data.HostNetwork = &in.Spec.HostNetwork
	}
	openyurtv1beta2.PutConversionData(&dst.ObjectMeta, data)
	return nil
}
