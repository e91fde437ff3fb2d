package nodepool

import (
	"fmt"
	"slices"
	"strings"
)

// Event reasons of the NodePool controller (§7).
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

// maxNamesInMessage caps the object names an event message lists.
const maxNamesInMessage = 10

// nameList renders names sorted, at most maxNamesInMessage of them, followed by "and N more".
func nameList(names []string) string {
	names = slices.Sorted(slices.Values(names))
	if len(names) <= maxNamesInMessage {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(names[:maxNamesInMessage], ", "), len(names)-maxNamesInMessage)
}
