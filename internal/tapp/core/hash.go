package core

import (
	"bytes"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"regexp"

	corev1 "k8s.io/api/core/v1"

	tkestackv1 "github.com/drover-dev/drover/api/tkestack/apps/v1"
)

// hashPrefix is the algorithm version of the hash label values.
const hashPrefix = "v1-"

// currentHashFormat matches hash label values written by this version of the algorithm.
var currentHashFormat = regexp.MustCompile(`^v1-[0-9a-f]{16}$`)

// IsCurrentHashFormat reports whether a hash label value was written by the current algorithm. Values of
// upstream TApp (all decimal), of other algorithm versions and empty values are foreign.
func IsCurrentHashFormat(v string) bool {
	return currentHashFormat.MatchString(v)
}

// templateHash returns the template hash of a pod template: the canonical serialisation of
// {metadata without the two hash labels, spec}. The template is not modified.
func templateHash(tpl *corev1.PodTemplateSpec) (string, error) {
	if tpl == nil {
		tpl = &corev1.PodTemplateSpec{}
	}
	meta := tpl.ObjectMeta.DeepCopy()
	delete(meta.Labels, tkestackv1.TAppHashKey)
	delete(meta.Labels, tkestackv1.TAppUniqHashKey)
	spec := canonicalPodSpec(&tpl.Spec)
	return hashOf(struct {
		Metadata any `json:"metadata"`
		Spec     any `json:"spec"`
	}{Metadata: meta, Spec: spec})
}

// uniqHash returns the uniq hash of a pod template: the canonical serialisation of its spec with the
// image of every container and every sidecar init container (restartPolicy Always) removed. Two templates
// with equal uniq hashes differ at most in metadata and in-place-updatable images.
func uniqHash(tpl *corev1.PodTemplateSpec) (string, error) {
	if tpl == nil {
		tpl = &corev1.PodTemplateSpec{}
	}
	spec := canonicalPodSpec(&tpl.Spec)
	for i := range spec.Containers {
		spec.Containers[i].Image = ""
	}
	for i := range spec.InitContainers {
		if isSidecar(&spec.InitContainers[i]) {
			spec.InitContainers[i].Image = ""
		}
	}
	return hashOf(struct {
		Spec any `json:"spec"`
	}{Spec: spec})
}

// isSidecar reports whether an init container is a sidecar (restartPolicy Always), whose image can be
// updated in place.
func isSidecar(c *corev1.Container) bool {
	return c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways
}

// hashOf hashes the canonical JSON of v: FNV-1a 64 bit, rendered as "v1-<16 hex digits>".
func hashOf(v any) (string, error) {
	b, err := canonicalJSON(v)
	if err != nil {
		return "", err
	}
	h := fnv.New64a()
	_, _ = h.Write(b) // hash.Hash never fails
	return fmt.Sprintf("%s%016x", hashPrefix, h.Sum64()), nil
}

// canonicalJSON returns the canonical serialisation: the Kubernetes JSON encoding of v, with
// null, {} and [] removed recursively, keys sorted and no whitespace.
func canonicalJSON(v any) ([]byte, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("encoding template: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var tree any
	if err := dec.Decode(&tree); err != nil {
		return nil, fmt.Errorf("decoding template: %w", err)
	}
	tree, _ = prune(tree)
	out, err := json.Marshal(tree) // maps are encoded with sorted keys, without whitespace
	if err != nil {
		return nil, fmt.Errorf("re-encoding template: %w", err)
	}
	return out, nil
}

// prune drops null, {} and [] recursively; the boolean is false when v itself is one of them.
func prune(v any) (any, bool) {
	switch t := v.(type) {
	case nil:
		return nil, false
	case map[string]any:
		for k, e := range t {
			p, keep := prune(e)
			if !keep {
				delete(t, k)
				continue
			}
			t[k] = p
		}
		return t, len(t) > 0
	case []any:
		out := make([]any, 0, len(t))
		for _, e := range t {
			p, keep := prune(e)
			if !keep {
				// An element that is empty stays as an empty object so list positions keep their meaning.
				p = map[string]any{}
			}
			out = append(out, p)
		}
		return out, len(out) > 0
	default:
		return v, true
	}
}
