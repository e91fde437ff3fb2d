package v1beta1

// Hub marks v1beta1 as the version every other version of PersistentPodState converts to and from
// (sigs.k8s.io/controller-runtime/pkg/conversion.Hub): the conversion webhook turns an object of any version
// into v1beta1, and v1beta1 into any version, through the spoke's ConvertTo and ConvertFrom.
func (*PersistentPodState) Hub() {}
