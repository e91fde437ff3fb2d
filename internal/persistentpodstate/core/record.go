package core

import (
	corev1 "k8s.io/api/core/v1"

	kruisev1beta1 "github.com/drover-dev/drover/api/kruise/apps/v1beta1"
)

// keySet is a list of keys without duplicates, in first-seen order, with a membership index.
type keySet struct {
	list []string
	set  map[string]struct{}
}

func newKeySet(keys []string) keySet {
	ks := keySet{set: make(map[string]struct{}, len(keys))}
	for _, k := range keys {
		if _, dup := ks.set[k]; !dup {
			ks.set[k] = struct{}{}
			ks.list = append(ks.list, k)
		}
	}
	return ks
}

func (ks keySet) has(k string) bool {
	_, ok := ks.set[k]
	return ok
}

// restrict returns m without the keys outside the set: m itself when nothing is dropped, a new map when
// something is, and nil when nothing remains (a record never holds an empty map).
func (ks keySet) restrict(m map[string]string) map[string]string {
	if len(m) == 0 {
		return nil
	}
	kept := 0
	for k := range m {
		if ks.has(k) {
			kept++
		}
	}
	switch kept {
	case len(m):
		return m
	case 0:
		return nil
	}
	out := make(map[string]string, kept)
	for k, v := range m {
		if ks.has(k) {
			out[k] = v
		}
	}
	return out
}

// recordTopology returns the record of a pod running on node, whose labels are given. The topology part is
// recorded again when there is no record, when the record names another node, or when its labels do not
// cover exactly the tracked keys; it then holds the node's value of every tracked key the node has.
// Otherwise it is left alone, so node label values changing later are not followed. e has already been
// restricted to the tracked keys, so equal sizes mean equal key sets.
func (c *computation) recordTopology(e kruisev1beta1.PodState, exists bool, node string,
	labels map[string]string) kruisev1beta1.PodState {
	if exists && e.NodeName == node && len(e.NodeTopologyLabels) == len(c.topologyKeys.list) {
		return e
	}
	var recorded map[string]string
	for _, k := range c.topologyKeys.list {
		if v, ok := labels[k]; ok {
			if recorded == nil {
				recorded = make(map[string]string, len(c.topologyKeys.list))
			}
			recorded[k] = v
		}
	}
	e.NodeName = node
	e.NodeTopologyLabels = recorded
	return e
}

// recordAnnotations applies the annotation value policy to the record e of an eligible pod. For each
// persisted key, with cur the pod's value and rec the recorded one:
//   - cur absent: rec is kept (an absent value never erases a recorded one);
//   - rec absent: cur is recorded;
//   - cur equal to rec: nothing changes;
//   - otherwise rec is kept (the first value wins across pods created again under the name) and a Mismatch
//     is reported, unless this very instance (same UID) was observed changing the key to cur while it
//     lived: then cur replaces rec.
//
// An in-life observation whose value the record ends up holding is listed as consumed.
func (c *computation) recordAnnotations(e kruisev1beta1.PodState, pod *corev1.Pod) kruisev1beta1.PodState {
	copied := false
	for _, k := range c.annotationKeys.list {
		cur, hasCur := pod.Annotations[k]
		if !hasCur {
			continue
		}
		rec, hasRec := e.Annotations[k]
		key := InLifeKey{UID: pod.UID, Key: k}
		observed, seen := c.pass.InLife[key]
		inLife := seen && observed == cur
		switch {
		case hasRec && rec == cur:
		case !hasRec || inLife:
			if !copied {
				e.Annotations = cloneWithRoom(e.Annotations, len(c.annotationKeys.list))
				copied = true
			}
			e.Annotations[k] = cur
		default:
			c.res.Mismatches = append(c.res.Mismatches, Mismatch{Pod: pod.Name, UID: pod.UID, Key: k, Recorded: rec, Current: cur})
			continue
		}
		if inLife {
			c.res.Consumed = append(c.res.Consumed, key)
		}
	}
	return e
}

// cloneWithRoom returns a new map holding m's pairs, sized for n keys.
func cloneWithRoom(m map[string]string, n int) map[string]string {
	out := make(map[string]string, max(n, len(m)))
	for k, v := range m {
		out[k] = v
	}
	return out
}
