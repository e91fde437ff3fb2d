package nodepool

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"

	openyurtv1beta2 "github.com/drover-dev/drover/api/openyurt/apps/v1beta2"
)

// Attributes are the pool attributes applied to a member node. Their JSON is the value of the annotation
// nodepool.openyurt.io/previous-attributes, in OpenYurt's exact format — {"labels":{…},"annotations":{…},
// "taints":[…]} with empty members omitted — so that drover and OpenYurt can take over from each other.
type Attributes struct {
	Labels      map[string]string `json:"labels,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
	Taints      []corev1.Taint    `json:"taints,omitempty"`
}

// IsEmpty reports whether the attributes hold nothing.
func (a Attributes) IsEmpty() bool {
	return len(a.Labels) == 0 && len(a.Annotations) == 0 && len(a.Taints) == 0
}

// reservedLabels and reservedAnnotations are node keys the controller manages itself; pool attributes never
// set or remove them, whatever a pool (or a hand-written annotation) says.
var (
	reservedLabels = []string{
		openyurtv1beta2.LabelCurrentNodePool,
		openyurtv1beta2.LabelDesiredNodePool,
	}
	reservedAnnotations = []string{openyurtv1beta2.AnnotationPrevAttrs}
)

// PoolAttributes returns the attributes a pool wants on its members: copies of its labels, annotations and
// taints, without the reserved keys and without a second taint of the same key and effect (the first wins;
// the API server would reject a node carrying both).
func PoolAttributes(pool *openyurtv1beta2.NodePool) Attributes {
	return sanitize(Attributes{
		Labels:      pool.Spec.Labels,
		Annotations: pool.Spec.Annotations,
		Taints:      pool.Spec.Taints,
	})
}

// sanitize returns a deep copy of a without reserved keys and duplicate taints.
func sanitize(a Attributes) Attributes {
	out := Attributes{
		Labels:      withoutKeys(a.Labels, reservedLabels),
		Annotations: withoutKeys(a.Annotations, reservedAnnotations),
	}
	seen := make(map[taintID]bool, len(a.Taints))
	for i := range a.Taints {
		id := idOf(&a.Taints[i])
		if seen[id] {
			continue
		}
		seen[id] = true
		out.Taints = append(out.Taints, *a.Taints[i].DeepCopy())
	}
	return out
}

func withoutKeys(m map[string]string, keys []string) map[string]string {
	if len(m) == 0 {
		return nil
	}
	out := maps.Clone(m)
	for _, k := range keys {
		delete(out, k)
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// EncodeAttributes returns the annotation value for a, or "" when a is empty (the annotation is removed then).
func EncodeAttributes(a Attributes) (string, error) {
	if a.IsEmpty() {
		return "", nil
	}
	b, err := json.Marshal(a)
	if err != nil {
		return "", fmt.Errorf("encoding pool attributes: %w", err)
	}
	return string(b), nil
}

// DecodeAttributes parses an annotation value. "" is empty attributes. Unknown fields are ignored so that a
// newer OpenYurt's annotation still decodes.
func DecodeAttributes(value string) (Attributes, error) {
	var a Attributes
	if value == "" {
		return a, nil
	}
	if err := json.Unmarshal([]byte(value), &a); err != nil {
		return Attributes{}, fmt.Errorf("decoding annotation %s: %w", openyurtv1beta2.AnnotationPrevAttrs, err)
	}
	return sanitize(a), nil
}

// ConciliateNode returns a copy of node on which the attributes want replace those recorded in its
// previous-attributes annotation (with empty want it strips them, as from a node that left its pool), and
// whether the copy differs from node in labels, annotations or taints:
//   - a recorded label or annotation that want no longer has is removed only if the node still holds the
//     recorded value; every key of want is set, overwriting the node's value;
//   - taints are identified by key and effect: a recorded taint that want no longer has is removed only if
//     its value is unchanged; each taint of want replaces the node's taint of the same key and effect (keeping
//     its timeAdded when want has none) or is appended;
//   - the annotation is rewritten as the JSON of want, or removed when want is empty;
//   - hostNetwork adds the label nodepool.openyurt.io/hostnetwork=true, which is never removed.
//
// An undecodable annotation counts as empty; its error is returned next to a valid result.
func ConciliateNode(node *corev1.Node, want Attributes, hostNetwork bool) (*corev1.Node, bool, error) {
	prev, decodeErr := DecodeAttributes(node.Annotations[openyurtv1beta2.AnnotationPrevAttrs])
	want = sanitize(want)

	out := node.DeepCopy()
	out.Labels = conciliateMap(out.Labels, prev.Labels, want.Labels)
	out.Annotations = conciliateMap(out.Annotations, prev.Annotations, want.Annotations)
	out.Spec.Taints = conciliateTaints(out.Spec.Taints, prev.Taints, want.Taints)
	if hostNetwork {
		out.Labels = setKey(out.Labels, openyurtv1beta2.LabelNodePoolHostNetwork, "true")
	}

	encoded, err := EncodeAttributes(want)
	if err != nil {
		// Cannot happen for maps of strings and taints; leave the node alone rather than record a lie.
		return node.DeepCopy(), false, err
	}
	if encoded == "" {
		delete(out.Annotations, openyurtv1beta2.AnnotationPrevAttrs)
	} else {
		out.Annotations = setKey(out.Annotations, openyurtv1beta2.AnnotationPrevAttrs, encoded)
	}
	return out, AttributesDiffer(node, out), decodeErr
}

// AttributesDiffer reports whether two nodes differ in labels, annotations or taints (nil and empty are equal).
func AttributesDiffer(a, b *corev1.Node) bool {
	return !maps.Equal(a.Labels, b.Labels) || !maps.Equal(a.Annotations, b.Annotations) ||
		!slices.EqualFunc(a.Spec.Taints, b.Spec.Taints, taintsEqual)
}

// conciliateMap applies the label/annotation rule of ConciliateNode to cur, which it may modify.
func conciliateMap(cur, prev, want map[string]string) map[string]string {
	for k, v := range prev {
		if _, kept := want[k]; kept {
			continue
		}
		if got, ok := cur[k]; ok && got == v {
			delete(cur, k)
		}
	}
	for k, v := range want {
		cur = setKey(cur, k, v)
	}
	return cur
}

func setKey(m map[string]string, k, v string) map[string]string {
	if m == nil {
		m = make(map[string]string)
	}
	m[k] = v
	return m
}

// taintID is the identity of a taint on a node.
type taintID struct {
	key    string
	effect corev1.TaintEffect
}

func idOf(t *corev1.Taint) taintID { return taintID{key: t.Key, effect: t.Effect} }

// conciliateTaints applies the taint rule of ConciliateNode. prev and want hold at most one taint per identity.
func conciliateTaints(cur, prev, want []corev1.Taint) []corev1.Taint {
	wanted := make(map[taintID]corev1.Taint, len(want))
	for _, t := range want {
		wanted[idOf(&t)] = t
	}
	recorded := make(map[taintID]string, len(prev))
	for _, t := range prev {
		recorded[idOf(&t)] = t.Value
	}

	var out []corev1.Taint
	placed := make(map[taintID]bool, len(want))
	for _, t := range cur {
		id := idOf(&t)
		if w, ok := wanted[id]; ok {
			if !placed[id] {
				out = append(out, replacement(w, t))
				placed[id] = true
			}
			continue
		}
		if v, ok := recorded[id]; ok && v == t.Value {
			continue
		}
		out = append(out, t)
	}
	for _, w := range want {
		if !placed[idOf(&w)] {
			out = append(out, *w.DeepCopy())
		}
	}
	return out
}

// replacement is the wanted taint w in place of the node's taint cur, keeping cur's timeAdded if w has none
// (so that a timeAdded set by someone else does not make every pass a write).
func replacement(w, cur corev1.Taint) corev1.Taint {
	out := *w.DeepCopy()
	if out.TimeAdded == nil && cur.TimeAdded != nil {
		out.TimeAdded = cur.TimeAdded.DeepCopy()
	}
	return out
}

func taintsEqual(a, b corev1.Taint) bool {
	if a.Key != b.Key || a.Value != b.Value || a.Effect != b.Effect {
		return false
	}
	if a.TimeAdded == nil || b.TimeAdded == nil {
		return a.TimeAdded == nil && b.TimeAdded == nil
	}
	return a.TimeAdded.Equal(b.TimeAdded)
}
