package v1beta2

// Event reasons of the NodePool controller (events.k8s.io, source drover-nodepool). At most one event per
// reason per pass and object.
const (
	// ReasonNodePoolNotFound (Warning, on a Node): the node asks, by LabelDesiredNodePool, to join a pool that
	// does not exist; it joins once the pool is created.
	ReasonNodePoolNotFound = "NodePoolNotFound"
	// ReasonInvalidPreviousAttributes (Warning, on a Node): its AnnotationPrevAttrs does not decode and was
	// treated as empty.
	ReasonInvalidPreviousAttributes = "InvalidPreviousAttributes"
	// ReasonNodeSyncFailed (Warning, on a NodePool): patching some of its nodes failed; the message names them.
	ReasonNodeSyncFailed = "NodeSyncFailed"
)
