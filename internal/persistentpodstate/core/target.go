package core

import "k8s.io/apimachinery/pkg/types"

// Target is what the controller learned of a PersistentPodState's workload.
type Target struct {
	// UID is the workload's UID; its pods carry a controller ownerReference with this UID.
	UID types.UID
	// Deleting is true when the workload has a deletionTimestamp: every record is then removed.
	Deleting bool
	// Replicas is the workload's replica count (0 when unset or unreadable).
	Replicas int32
	// Ordinals are the workload's valid ordinals, built once per pass with NewOrdinals.
	Ordinals Ordinals
}
