package nodepool

// Event actions (events.k8s.io requires one). The reasons are the openyurtv1beta2.Reason* constants.
const (
	actionJoin           = "Join"
	actionSyncAttributes = "SyncAttributes"
)
