package nodepool

// Event reasons of the NodePool controller.
const (
	// ReasonNodePoolNotFound (Warning, on a Node): the node asks to join a pool that does not exist.
	ReasonNodePoolNotFound = "NodePoolNotFound"
	// ReasonInvalidPreviousAttributes (Warning, on a Node): its previous-attributes annotation does not decode
	// and was treated as empty.
	ReasonInvalidPreviousAttributes = "InvalidPreviousAttributes"
	// ReasonNodeSyncFailed (Warning, on a NodePool): patching some of its nodes failed.
	ReasonNodeSyncFailed = "NodeSyncFailed"
)

// Event actions (events.k8s.io requires one).
const (
	actionJoin           = "Join"
	actionSyncAttributes = "SyncAttributes"
)
