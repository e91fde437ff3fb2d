package render

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	jsonpatch "github.com/evanphx/json-patch/v5"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"

	openyurtv1alpha1 "github.com/drover-dev/drover/api/openyurt/apps/v1alpha1"
)

// MatchingTweaks returns the tweaks whose pools contain the pool's name or whose nodepoolSelector matches
// the pool's labels, in list order. An absent or unconvertible selector matches nothing.
func MatchingTweaks(spec *openyurtv1alpha1.YurtAppDaemonSpec, pool Pool) []openyurtv1alpha1.WorkloadTweak {
	if spec == nil {
		return nil
	}
	idx := matchingIndexes(spec, pool)
	out := make([]openyurtv1alpha1.WorkloadTweak, 0, len(idx))
	for _, i := range idx {
		out = append(out, spec.WorkloadTweaks[i])
	}
	return out
}

// matchingIndexes returns the indexes in spec.workloadTweaks of the tweaks that select pool.
func matchingIndexes(spec *openyurtv1alpha1.YurtAppDaemonSpec, pool Pool) []int {
	var out []int
	for i := range spec.WorkloadTweaks {
		if tweakSelects(&spec.WorkloadTweaks[i], pool) {
			out = append(out, i)
		}
	}
	return out
}

func tweakSelects(t *openyurtv1alpha1.WorkloadTweak, pool Pool) bool {
	if slices.Contains(t.Pools, pool.Name) {
		return true
	}
	if t.NodePoolSelector == nil {
		return false
	}
	sel, err := metav1.LabelSelectorAsSelector(t.NodePoolSelector)
	if err != nil {
		return false
	}
	return sel.Matches(labels.Set(pool.Labels))
}

// tweakError locates a failing tweak for messages and field paths. Patch is -1 when the failure is the
// decoding of the patched object rather than one operation.
type tweakError struct {
	Tweak, Patch int
	Err          error
}

func (e *tweakError) Error() string {
	if e.Patch < 0 {
		return fmt.Sprintf("spec.workloadTweaks[%d].tweaks.patches: %v", e.Tweak, e.Err)
	}
	return fmt.Sprintf("spec.workloadTweaks[%d].tweaks.patches[%d]: %v", e.Tweak, e.Patch, e.Err)
}

func (e *tweakError) Unwrap() error { return e.Err }

// applyTweak applies the images and patches of tweak number i to obj for pool. Patches work
// on the JSON of the object rendered so far (as encoding/json writes it, like OpenYurt's YurtAppSet) and
// the result is decoded strictly, so a patch that adds an unknown field fails instead of vanishing.
func applyTweak(obj client.Object, t *openyurtv1alpha1.WorkloadTweak, i int, pool string) (client.Object, error) {
	setImages(&partsOf(obj).template.Spec, t.Tweaks.ContainerImages)
	if len(t.Tweaks.Patches) == 0 {
		return obj, nil
	}
	doc, err := json.Marshal(obj)
	if err != nil {
		return nil, &tweakError{Tweak: i, Patch: -1, Err: err}
	}
	if doc, err = applyPatches(doc, t.Tweaks.Patches, pool); err != nil {
		return nil, &tweakError{Tweak: i, Patch: patchIndex(err), Err: err}
	}
	out, err := decodeStrict(doc, obj)
	if err != nil {
		return nil, &tweakError{Tweak: i, Patch: -1, Err: err}
	}
	return out, nil
}

// setImages sets the image of the containers and init containers named in images. A name that matches no
// container (a patch may have removed it) is skipped; the webhook checks names against the template.
func setImages(pod *corev1.PodSpec, images []openyurtv1alpha1.ContainerImage) {
	for _, img := range images {
		for k := range pod.Containers {
			if pod.Containers[k].Name == img.Name {
				pod.Containers[k].Image = img.TargetImage
			}
		}
		for k := range pod.InitContainers {
			if pod.InitContainers[k].Name == img.Name {
				pod.InitContainers[k].Image = img.TargetImage
			}
		}
	}
}

// patchError names the first patch of a list that fails.
type patchError struct {
	Index int
	Err   error
}

func (e *patchError) Error() string { return e.Err.Error() }

func (e *patchError) Unwrap() error { return e.Err }

// patchIndex returns the index of the failing patch err names, or -1 when no one patch is to blame.
func patchIndex(err error) int {
	var pe *patchError
	if errors.As(err, &pe) {
		return pe.Index
	}
	return -1
}

// applyPatches applies the RFC 6902 operations of patches to doc in order, after substituting the pool name
// in their values, in one pass: doc is parsed once, every operation applies to it in memory, and the result
// is encoded once, so the cost grows linearly with the number of patches. A failure is a *patchError naming
// the first patch that fails, with the error it gets when the patches are applied one at a time.
//
// One kind of patch starts a pass of its own: a pointer whose first reference token is empty ("//…") goes,
// in the JSON patch library, through the document as it was when the pass began, not as the earlier
// operations left it.
func applyPatches(doc []byte, patches []openyurtv1alpha1.Patch, pool string) ([]byte, error) {
	first := 0 // the first patch of the current pass
	ops := []byte{'['}
	for j := range patches {
		if j > first && strings.HasPrefix(patches[j].Path, "//") {
			var err error
			if doc, err = applyOperations(doc, ops, patches[first:j], first); err != nil {
				return nil, err
			}
			first, ops = j, []byte{'['}
		}
		op, err := encodeOperation(&patches[j], pool)
		if err != nil {
			// The patches before j come first: report one of them if it does not apply.
			if j > first {
				if _, perr := applyOperations(doc, ops, patches[first:j], first); perr != nil {
					return nil, perr
				}
			}
			return nil, &patchError{Index: j, Err: err}
		}
		if j > first {
			ops = append(ops, ',')
		}
		ops = append(ops, op...)
	}
	return applyOperations(doc, ops, patches[first:], first)
}

// applyOperations applies ops, the unterminated JSON array of the encoded operations of patches, to doc in
// one pass. first is the index of patches[0] among the tweak's patches.
func applyOperations(doc, ops []byte, patches []openyurtv1alpha1.Patch, first int) ([]byte, error) {
	patch, err := jsonpatch.DecodePatch(append(ops[:len(ops):len(ops)], ']'))
	if err != nil {
		return nil, &patchError{Index: -1, Err: fmt.Errorf("decoding the operations: %w", err)}
	}
	out, err := patch.Apply(doc)
	if err == nil {
		return out, nil
	}
	// Apply stops at the first operation that fails and returns its error, so a prefix of the operations
	// fails exactly when it holds that one: the shortest failing prefix ends with it.
	j := sort.Search(len(patch), func(k int) bool {
		_, perr := patch[:k+1].Apply(doc)
		return perr != nil
	})
	if j == len(patch) {
		return nil, &patchError{Index: -1, Err: err}
	}
	p := &patches[j]
	return nil, &patchError{Index: first + j, Err: fmt.Errorf("%s %s: %w", p.Operation, p.Path, err)}
}

// encodeOperation returns the JSON of p as an RFC 6902 operation, with the pool name substituted in its value.
func encodeOperation(p *openyurtv1alpha1.Patch, pool string) ([]byte, error) {
	op := map[string]any{"op": string(p.Operation), "path": p.Path}
	switch p.Operation {
	case openyurtv1alpha1.PatchAdd, openyurtv1alpha1.PatchReplace:
		if p.Value == nil || len(p.Value.Raw) == 0 {
			return nil, fmt.Errorf("%s needs a value", p.Operation)
		}
		v, err := decodeJSON(p.Value.Raw)
		if err != nil {
			return nil, fmt.Errorf("value: %w", err)
		}
		op["value"] = substitute(v, pool)
	case openyurtv1alpha1.PatchRemove:
	default:
		return nil, fmt.Errorf("unsupported operation %q", p.Operation)
	}
	raw, err := json.Marshal(op)
	if err != nil {
		return nil, fmt.Errorf("encoding the operation: %w", err)
	}
	return raw, nil
}

// substitute replaces {{nodepool-name}} in every string and object key of v.
func substitute(v any, pool string) any {
	switch x := v.(type) {
	case string:
		return strings.ReplaceAll(x, openyurtv1alpha1.NodePoolNamePlaceholder, pool)
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[strings.ReplaceAll(k, openyurtv1alpha1.NodePoolNamePlaceholder, pool)] = substitute(e, pool)
		}
		return out
	case []any:
		for i, e := range x {
			x[i] = substitute(e, pool)
		}
		return x
	default:
		return v
	}
}

// decodeStrict decodes doc into a new object of like's type, rejecting unknown fields and trailing data.
func decodeStrict(doc []byte, like client.Object) (client.Object, error) {
	var out client.Object
	switch like.(type) {
	case *appsv1.Deployment:
		out = &appsv1.Deployment{}
	default:
		out = &appsv1.StatefulSet{}
	}
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.DisallowUnknownFields()
	if err := dec.Decode(out); err != nil {
		return nil, fmt.Errorf("the patched object does not decode: %w", err)
	}
	if dec.More() {
		return nil, fmt.Errorf("the patched object does not decode: trailing data")
	}
	out.GetObjectKind().SetGroupVersionKind(like.GetObjectKind().GroupVersionKind())
	return out, nil
}
