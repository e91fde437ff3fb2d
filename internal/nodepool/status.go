package nodepool

import (
	"slices"

	corev1 "k8s.io/api/core/v1"

	openyurtv1beta2 "github.com/drover-dev/drover/api/openyurt/apps/v1beta2"
)

// ComputeStatus returns the status of a pool with the given members: readyNodeNum counts the members
// whose Ready condition is True, unreadyNodeNum all the others (including nodes without a Ready condition),
// and nodes lists the member names, sorted and without duplicates.
func ComputeStatus(members []*corev1.Node) openyurtv1beta2.NodePoolStatus {
	var st openyurtv1beta2.NodePoolStatus
	seen := make(map[string]bool, len(members))
	for _, n := range members {
		if seen[n.Name] {
			continue
		}
		seen[n.Name] = true
		st.Nodes = append(st.Nodes, n.Name)
		if IsNodeReady(n) {
			st.ReadyNodeNum++
		} else {
			st.UnreadyNodeNum++
		}
	}
	slices.Sort(st.Nodes)
	return st
}

// withMembers returns a copy of current with the member fields of counted (readyNodeNum, unreadyNodeNum,
// nodes): the controller owns those only. The election fields (leaderEndpoints, leaderNum,
// leaderLastElectedTime, conditions) are OpenYurt's hub-leader controller's, and are kept as they are.
func withMembers(current, counted openyurtv1beta2.NodePoolStatus) openyurtv1beta2.NodePoolStatus {
	out := *current.DeepCopy()
	out.ReadyNodeNum, out.UnreadyNodeNum, out.Nodes = counted.ReadyNodeNum, counted.UnreadyNodeNum, counted.Nodes
	return out
}

// IsNodeReady reports whether the node's Ready condition is True.
func IsNodeReady(node *corev1.Node) bool {
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// StatusEqual reports whether two pool statuses have the same member fields; a nil and an empty node list are
// equal. The election fields are not the controller's to compare: it copies them (withMembers).
func StatusEqual(a, b openyurtv1beta2.NodePoolStatus) bool {
	return a.ReadyNodeNum == b.ReadyNodeNum && a.UnreadyNodeNum == b.UnreadyNodeNum && slices.Equal(a.Nodes, b.Nodes)
}
