package nodepool

import (
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-dev/drover/internal/kit"
)

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

// eventsByObject buffers the events of one pass by the object they regard (the pool, or one of the nodes),
// in the order those objects were first named. The zero value is ready.
type eventsByObject struct {
	regarding []client.Object
	buffers   []*kit.Events
}

// on returns the buffer of the events regarding obj.
func (e *eventsByObject) on(obj client.Object) *kit.Events {
	for i, o := range e.regarding {
		if o == obj {
			return e.buffers[i]
		}
	}
	e.regarding = append(e.regarding, obj)
	e.buffers = append(e.buffers, &kit.Events{})
	return e.buffers[len(e.buffers)-1]
}

// emit records every buffered event and empties the buffers.
func (e *eventsByObject) emit(rec events.EventRecorder) {
	for i, b := range e.buffers {
		b.Emit(rec, e.regarding[i])
	}
	e.regarding, e.buffers = nil, nil
}
