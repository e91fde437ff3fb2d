package core

import (
	"cmp"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	kruisev1beta1 "github.com/drover-dev/drover/api/kruise/apps/v1beta1"
)

// InLifeKey names an in-life annotation change: the pod instance (UID) and the annotation key.
type InLifeKey struct {
	UID types.UID
	Key string
}

// Pass is the input of one status computation.
type Pass struct {
	// PPS is the object as read from the cache; never modified.
	PPS *kruisev1beta1.PersistentPodState
	// Target is what was learned of the workload; nil when it was not found.
	Target *Target
	// Pods are the pods whose controller is the target, in any state; never modified.
	Pods []*corev1.Pod
	// Node returns the labels of a node, and false when the node is not in the cache. Compute calls it at
	// most once per node name. A nil Node finds no node.
	Node func(name string) (map[string]string, bool)
	// InLife holds the annotation changes observed on live pods: (pod UID, key) -> the new value. The pod
	// event handler stores one when a pod changes a persisted annotation away from the value recorded for
	// its name.
	InLife map[InLifeKey]string
}

// Mismatch is a persisted annotation whose recorded value is kept while the live pod shows another value.
type Mismatch struct {
	Pod      string
	UID      types.UID
	Key      string
	Recorded string
	Current  string
}

// Result is the outcome of Compute.
type Result struct {
	// PodStates is the new status.podStates: nil when empty, and without empty inner maps. Entries that did
	// not change share their maps with the input.
	PodStates map[string]kruisev1beta1.PodState
	// Mismatches are the recorded annotation values kept while the live pod shows another value, sorted by
	// pod name, then key.
	Mismatches []Mismatch
	// Consumed are the in-life observations whose value the record now holds (applied this pass, or already
	// held); the caller deletes them once the status is written. Sorted by UID, then key.
	Consumed []InLifeKey
	// Skipped are the eligible pods not recorded because their node is not in the cache, sorted.
	Skipped []string
}

// Compute derives the new status.podStates of a pass.
//
// A target that is gone or being deleted removes every record, whatever the retention policy. With 0
// replicas, WhenScaled (also empty or unknown) removes every record, while WhenDeleted keeps them and
// records nothing. Otherwise every eligible pod (active, Ready and scheduled) is recorded, then WhenScaled
// removes the records of names outside the valid ordinals that no active pod holds. Keys the spec no longer
// tracks, topology or annotation, are dropped from every record. The cost is O(pods + entries).
func Compute(p Pass) Result {
	if p.PPS == nil || p.Target == nil || p.Target.Deleting {
		return Result{}
	}
	whenDeleted := p.PPS.Spec.PersistentPodStateRetentionPolicy == kruisev1beta1.RetainWhenDeleted
	if p.Target.Replicas <= 0 && !whenDeleted {
		return Result{}
	}
	c := newComputation(&p)
	out := c.pruned()
	if p.Target.Replicas > 0 {
		active := c.record(out)
		if !whenDeleted {
			removeScaledDown(out, active, p.Target.Ordinals)
		}
	}
	return c.finish(out)
}

// computation holds the state of one Compute call.
type computation struct {
	pass *Pass
	// topologyKeys are the tracked topology keys: the required keys and those of every preferred term.
	topologyKeys keySet
	// annotationKeys are the persisted annotation keys.
	annotationKeys keySet
	nodes          map[string]nodeLookup
	res            Result
}

// nodeLookup is a memoized answer of Pass.Node.
type nodeLookup struct {
	labels map[string]string
	found  bool
}

func newComputation(p *Pass) *computation {
	spec := &p.PPS.Spec
	var topology []string
	if r := spec.RequiredPersistentTopology; r != nil {
		topology = append(topology, r.Keys...)
	}
	for _, term := range spec.PreferredPersistentTopology {
		topology = append(topology, term.Preference.Keys...)
	}
	annotations := make([]string, 0, len(spec.PersistentPodAnnotations))
	for _, a := range spec.PersistentPodAnnotations {
		annotations = append(annotations, a.Key)
	}
	return &computation{
		pass:           p,
		topologyKeys:   newKeySet(topology),
		annotationKeys: newKeySet(annotations),
		nodes:          map[string]nodeLookup{},
	}
}

// pruned returns the current records, each restricted to the tracked topology keys and the persisted
// annotation keys. The returned map is new; unchanged entries share their inner maps with the input.
func (c *computation) pruned() map[string]kruisev1beta1.PodState {
	current := c.pass.PPS.Status.PodStates
	out := make(map[string]kruisev1beta1.PodState, max(len(current), len(c.pass.Pods)))
	for name, e := range current {
		e.NodeTopologyLabels = c.topologyKeys.restrict(e.NodeTopologyLabels)
		e.Annotations = c.annotationKeys.restrict(e.Annotations)
		out[name] = e
	}
	return out
}

// record records every eligible pod into out and returns the active pods by name. A pod whose node is not
// in the cache is not recorded this pass (its record keeps only the pruning).
func (c *computation) record(out map[string]kruisev1beta1.PodState) map[string]*corev1.Pod {
	active := make(map[string]*corev1.Pod, len(c.pass.Pods))
	for _, pod := range c.pass.Pods {
		if pod == nil || !isActive(pod) {
			continue
		}
		active[pod.Name] = pod
		if !PodReady(pod) || pod.Spec.NodeName == "" {
			continue
		}
		labels, found := c.node(pod.Spec.NodeName)
		if !found {
			c.res.Skipped = append(c.res.Skipped, pod.Name)
			continue
		}
		e, exists := out[pod.Name]
		e = c.recordTopology(e, exists, pod.Spec.NodeName, labels)
		e = c.recordAnnotations(e, pod)
		out[pod.Name] = e
	}
	return active
}

// node returns the labels of a node, asking Pass.Node at most once per name.
func (c *computation) node(name string) (map[string]string, bool) {
	if n, ok := c.nodes[name]; ok {
		return n.labels, n.found
	}
	var n nodeLookup
	if c.pass.Node != nil {
		n.labels, n.found = c.pass.Node(name)
	}
	c.nodes[name] = n
	return n.labels, n.found
}

// removeScaledDown removes, under WhenScaled, the records of names whose ordinal is not valid and that no
// active pod holds. Names without an ordinal are kept, and so is a valid name whose pod is gone: keeping it
// is what brings a pod created again back to its place.
func removeScaledDown(out map[string]kruisev1beta1.PodState, active map[string]*corev1.Pod, valid Ordinals) {
	for name := range out {
		if o, ok := OrdinalOf(name); !ok || valid.Contains(o) {
			continue
		}
		if _, ok := active[name]; !ok {
			delete(out, name)
		}
	}
}

// finish sets the result's podStates and orders its lists.
func (c *computation) finish(out map[string]kruisev1beta1.PodState) Result {
	if len(out) > 0 {
		c.res.PodStates = out
	}
	slices.Sort(c.res.Skipped)
	slices.SortFunc(c.res.Mismatches, func(a, b Mismatch) int {
		return cmp.Or(strings.Compare(a.Pod, b.Pod), strings.Compare(a.Key, b.Key))
	})
	slices.SortFunc(c.res.Consumed, func(a, b InLifeKey) int {
		return cmp.Or(strings.Compare(string(a.UID), string(b.UID)), strings.Compare(a.Key, b.Key))
	})
	return c.res
}

// isActive reports whether a pod counts as present: not terminating and not finished.
func isActive(pod *corev1.Pod) bool {
	return pod.DeletionTimestamp == nil && !PodFinished(pod)
}

// PodFinished reports whether the pod's phase is Succeeded or Failed.
func PodFinished(pod *corev1.Pod) bool {
	return pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed
}

// PodReady reports whether the pod's Ready condition is True.
func PodReady(pod *corev1.Pod) bool {
	for i := range pod.Status.Conditions {
		if pod.Status.Conditions[i].Type == corev1.PodReady {
			return pod.Status.Conditions[i].Status == corev1.ConditionTrue
		}
	}
	return false
}
