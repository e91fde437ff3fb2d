// Package inject steers a pod being created back to where its identity (its name) last ran, from what a
// PersistentPodState recorded for it. It is pure: the only question it asks the outside world (whether a
// recorded node is gone) goes through Options.NodeGone.
package inject

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"

	kruisev1beta1 "github.com/drover-dev/drover/api/kruise/apps/v1beta1"
)

// DefaultIdentityKeys are the node label keys that name one node when Options.IdentityKeys is nil.
var DefaultIdentityKeys = []string{corev1.LabelHostname}

// Bounds of the weight of a preferred scheduling term, as the API server enforces them on pods.
const (
	minWeight = 1
	maxWeight = 100
)

// Options configures Pod.
type Options struct {
	// IdentityKeys are the node label keys that name one node (default kubernetes.io/hostname): they are
	// dropped when the recorded node is confirmed gone. nil means the default; an empty, non-nil list names
	// no key.
	IdentityKeys []string
	// NodeGone reports whether the named node is confirmed deleted (absent from the cache AND a live read
	// returned NotFound). nil: never. Called only for required identity keys whose recorded entry has a
	// non-empty nodeName, at most once per call.
	NodeGone func(nodeName string) bool
}

// Result says what Pod did.
type Result struct {
	Mutated   bool     // anything changed on the pod
	Dropped   []string // identity keys dropped because the recorded node is gone
	Conflicts []string // required keys not set because the pod's nodeSelector already had another value
	Restored  []string // annotation keys restored
	NoState   bool     // the PPS has no entry for the pod
}

// Pod steers pod (modified in place) back to where its identity ran according to pps's entry for pod.Name.
//
//   - Required keys, in spec order, that the entry recorded become nodeSelector entries. A key the pod's
//     nodeSelector already holds keeps the pod's value (the template states the current intent): another
//     value is a conflict, the same value counts as steered. An identity key whose recorded node is
//     confirmed gone is dropped, so the pod is not left Pending for a node that no longer exists; other keys
//     (a zone) always stay.
//   - Each preferred term of the spec with at least one recorded key becomes one preferred node-affinity term
//     (key In [recorded value] for each recorded key), its weight clamped to 1–100, appended after the pod's
//     own terms. A term identical to one the pod already has is not added again but counts as steered, so a
//     second pass changes nothing. Required node affinity is never touched.
//   - With the PPS annotation drover.dev/restore-persistent-pod-annotations "true", each recorded annotation
//     whose key is still in the spec and that the pod lacks is set; a value the creator set wins.
//
// When any of these steered the pod, kruise.io/injected-persistent-pod-state is set to the PPS's name. A pod
// whose only required keys all conflict, and that gets nothing else, is not marked: nothing of the PPS
// steers it.
func Pod(pod *corev1.Pod, pps *kruisev1beta1.PersistentPodState, opts Options) Result {
	entry, ok := pps.Status.PodStates[pod.Name]
	if !ok {
		return Result{NoState: true}
	}
	var res Result
	required := injectRequired(pod, &pps.Spec, &entry, opts, &res)
	preferred := injectPreferred(pod, &pps.Spec, &entry, &res)
	restored := restoreAnnotations(pod, pps, &entry, &res)
	if !required && !preferred && !restored {
		return res
	}
	if pod.Annotations[kruisev1beta1.AnnotationInjectedPersistentPodState] != pps.Name {
		setAnnotation(pod, kruisev1beta1.AnnotationInjectedPersistentPodState, pps.Name)
		res.Mutated = true
	}
	return res
}

// injectRequired merges the recorded values of the required keys into the pod's nodeSelector. It reports
// whether some recorded value steers the pod (set now, or already there).
func injectRequired(pod *corev1.Pod, spec *kruisev1beta1.PersistentPodStateSpec, entry *kruisev1beta1.PodState,
	opts Options, res *Result) bool {
	if spec.RequiredPersistentTopology == nil {
		return false
	}
	identity := opts.IdentityKeys
	if identity == nil {
		identity = DefaultIdentityKeys
	}
	nodeGone := onceNodeGone(opts.NodeGone, entry.NodeName)
	steered := false
	seen := map[string]bool{}
	for _, key := range spec.RequiredPersistentTopology.Keys {
		value, recorded := entry.NodeTopologyLabels[key]
		if !recorded || seen[key] {
			continue
		}
		seen[key] = true
		if current, set := pod.Spec.NodeSelector[key]; set {
			if current == value {
				steered = true
			} else {
				res.Conflicts = append(res.Conflicts, key)
			}
			continue
		}
		if slices.Contains(identity, key) && nodeGone() {
			res.Dropped = append(res.Dropped, key)
			continue
		}
		if pod.Spec.NodeSelector == nil {
			pod.Spec.NodeSelector = map[string]string{}
		}
		pod.Spec.NodeSelector[key] = value
		res.Mutated = true
		steered = true
	}
	return steered
}

// onceNodeGone returns a function answering whether the recorded node is gone, asking fn at most once and
// never when there is no recorded node name or no fn.
func onceNodeGone(fn func(string) bool, nodeName string) func() bool {
	asked, gone := false, false
	return func() bool {
		if fn == nil || nodeName == "" {
			return false
		}
		if !asked {
			asked, gone = true, fn(nodeName)
		}
		return gone
	}
}

// injectPreferred appends one preferred node-affinity term per spec term with a recorded key. It reports
// whether some term steers the pod (appended now, or already there).
func injectPreferred(pod *corev1.Pod, spec *kruisev1beta1.PersistentPodStateSpec, entry *kruisev1beta1.PodState,
	res *Result) bool {
	steered := false
	for i := range spec.PreferredPersistentTopology {
		term, ok := preferredTerm(&spec.PreferredPersistentTopology[i], entry)
		if !ok {
			continue
		}
		steered = true
		existing := preferredTerms(pod)
		if existing != nil && slices.ContainsFunc(*existing, func(t corev1.PreferredSchedulingTerm) bool {
			return equality.Semantic.DeepEqual(t, term)
		}) {
			continue
		}
		if existing == nil {
			existing = ensurePreferredTerms(pod)
		}
		*existing = append(*existing, term)
		res.Mutated = true
	}
	return steered
}

// preferredTerm builds the scheduling term of one spec term from the recorded values of its keys, in the
// term's order. It returns false when no key of the term was recorded.
func preferredTerm(spec *kruisev1beta1.PreferredTopologyTerm, entry *kruisev1beta1.PodState) (corev1.PreferredSchedulingTerm, bool) {
	var exprs []corev1.NodeSelectorRequirement
	seen := map[string]bool{}
	for _, key := range spec.Preference.Keys {
		value, recorded := entry.NodeTopologyLabels[key]
		if !recorded || seen[key] {
			continue
		}
		seen[key] = true
		exprs = append(exprs, corev1.NodeSelectorRequirement{Key: key, Operator: corev1.NodeSelectorOpIn, Values: []string{value}})
	}
	if len(exprs) == 0 {
		return corev1.PreferredSchedulingTerm{}, false
	}
	return corev1.PreferredSchedulingTerm{
		Weight:     min(max(spec.Weight, minWeight), maxWeight),
		Preference: corev1.NodeSelectorTerm{MatchExpressions: exprs},
	}, true
}

// preferredTerms returns the pod's preferred node-affinity terms, or nil when the pod has no node affinity.
func preferredTerms(pod *corev1.Pod) *[]corev1.PreferredSchedulingTerm {
	if pod.Spec.Affinity == nil || pod.Spec.Affinity.NodeAffinity == nil {
		return nil
	}
	return &pod.Spec.Affinity.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution
}

// ensurePreferredTerms creates the pod's affinity and node affinity when they are nil and returns its
// preferred node-affinity terms.
func ensurePreferredTerms(pod *corev1.Pod) *[]corev1.PreferredSchedulingTerm {
	if pod.Spec.Affinity == nil {
		pod.Spec.Affinity = &corev1.Affinity{}
	}
	if pod.Spec.Affinity.NodeAffinity == nil {
		pod.Spec.Affinity.NodeAffinity = &corev1.NodeAffinity{}
	}
	return &pod.Spec.Affinity.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution
}

// restoreAnnotations sets the recorded annotations the pod lacks, when the PPS opted in. It reports whether
// it set any.
func restoreAnnotations(pod *corev1.Pod, pps *kruisev1beta1.PersistentPodState, entry *kruisev1beta1.PodState,
	res *Result) bool {
	if pps.Annotations[kruisev1beta1.AnnotationRestorePersistentPodAnnotations] != "true" {
		return false
	}
	for _, a := range pps.Spec.PersistentPodAnnotations {
		value, recorded := entry.Annotations[a.Key]
		if !recorded {
			continue
		}
		if _, set := pod.Annotations[a.Key]; set {
			continue
		}
		setAnnotation(pod, a.Key, value)
		res.Restored = append(res.Restored, a.Key)
		res.Mutated = true
	}
	return len(res.Restored) > 0
}

func setAnnotation(pod *corev1.Pod, key, value string) {
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	pod.Annotations[key] = value
}
