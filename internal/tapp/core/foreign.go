package core

import (
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// A pod with a foreign-format hash (written by upstream TApp, whose hashes cannot be reproduced) is compared
// with the pod its template would give, to decide as upstream did: upstream updated a pod in place when only
// images differed (its uniq hash, the spec without images, was equal) and recreated it otherwise. The API
// server and admission plugins add to a pod what its template does not say (defaults, the service account
// token volume and its mounts, tolerations, injected sidecars), so the comparison asks whether everything
// the desired pod's spec says is in the live pod's spec, images aside:
//
//   - a value set in the desired spec must be set, equal, in the live one; the live spec may set more
//     (a default the template left out is not a difference);
//   - lists of named elements (containers, init containers, volumes, volume mounts, env, ports, ...) are
//     matched by name; the live list may have more elements (injected ones), except env, whose extra
//     entries mean a variable the template no longer sets;
//   - other lists of objects (tolerations, topology spread constraints, ...) need each desired element in
//     the live list; lists of scalars (command, args) must be equal.
//
// A field removed from the template while no controller ran cannot be told from a default, so it is not
// seen; such a pod is updated in place (or restamped) rather than recreated.

// nameKeyedLists are the spec lists whose elements are matched by their "name" field.
var nameKeyedLists = map[string]bool{
	"containers": true, "initContainers": true, "ephemeralContainers": true, "volumes": true,
	"volumeMounts": true, "volumeDevices": true, "env": true, "ports": true, "imagePullSecrets": true,
	"resourceClaims": true,
}

// exactLists are name-keyed lists in which the live pod may have no element the desired one lacks.
var exactLists = map[string]bool{"env": true}

// exactFields are container fields no default sets: set in the live pod and not in the desired one, they are
// what the template no longer says. (An admission webhook that adds environment variables makes its pods
// differ; they are recreated, the safe side.)
var exactFields = []string{"env", "command", "args"}

// specDifference returns where desired's spec says something live's does not, images aside, as a field path
// with the two values ("" when everything is there). It names the whole spec when either cannot be converted.
func specDifference(live, desired *corev1.Pod) string {
	l, err := runtime.DefaultUnstructuredConverter.ToUnstructured(withoutImages(&live.Spec))
	if err != nil {
		return "spec: " + err.Error()
	}
	d, err := runtime.DefaultUnstructuredConverter.ToUnstructured(withoutImages(&desired.Spec))
	if err != nil {
		return "spec: " + err.Error()
	}
	return difference(d, l, "", "spec")
}

// specMatchesExceptImages reports whether everything desired's spec says is in live's spec, images aside.
func specMatchesExceptImages(live, desired *corev1.Pod) bool {
	return specDifference(live, desired) == ""
}

// withoutImages returns a copy of spec with the images of containers and sidecar init containers cleared
// (the images an in-place update changes).
func withoutImages(spec *corev1.PodSpec) *corev1.PodSpec {
	out := spec.DeepCopy()
	for i := range out.Containers {
		out.Containers[i].Image = ""
	}
	for i := range out.InitContainers {
		if isSidecar(&out.InitContainers[i]) {
			out.InitContainers[i].Image = ""
		}
	}
	return out
}

// difference returns "" when want (a value of the desired spec) is contained in got (the live one's), else
// the path of the first value that is not, with both values. key is the field name of the value
// ("containers[]" for an element of containers), which decides how a list is matched and which fields must
// not be set in got alone.
func difference(want, got any, key, path string) string {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			if len(w) == 0 && got == nil {
				return ""
			}
			return mismatch(path, want, got)
		}
		for _, k := range slices.Sorted(maps.Keys(w)) {
			if d := difference(w[k], g[k], k, path+"."+k); d != "" {
				return d
			}
		}
		if key == "containers[]" || key == "initContainers[]" {
			for _, k := range exactFields {
				if _, set := w[k]; !set && g[k] != nil {
					return mismatch(path+"."+k, nil, g[k])
				}
			}
		}
		return ""
	case []any:
		g, _ := got.([]any)
		return listDifference(w, g, key, path)
	case nil:
		return ""
	default:
		if !reflect.DeepEqual(want, got) {
			return mismatch(path, want, got)
		}
		return ""
	}
}

func listDifference(want, got []any, key, path string) string {
	if len(want) > 0 && !isObject(want[0]) {
		if !reflect.DeepEqual(want, got) { // command, args, ...
			return mismatch(path, want, got)
		}
		return ""
	}
	if nameKeyedLists[key] {
		byName := map[string]any{}
		for _, g := range got {
			byName[nameOf(g)] = g
		}
		for _, w := range want {
			p := fmt.Sprintf("%s[%s]", path, nameOf(w))
			g, ok := byName[nameOf(w)]
			if !ok {
				return p + ": missing in the pod"
			}
			if d := difference(w, g, key+"[]", p); d != "" {
				return d
			}
		}
		if exactLists[key] && len(got) != len(want) {
			return mismatch(path, want, got)
		}
		return ""
	}
	for i, w := range want {
		if !slices.ContainsFunc(got, func(g any) bool { return difference(w, g, key+"[]", "") == "" }) {
			return fmt.Sprintf("%s[%d]: %s missing in the pod", path, i, compact(w))
		}
	}
	return ""
}

// mismatch renders a difference: the path, the template's value and the pod's.
func mismatch(path string, want, got any) string {
	return fmt.Sprintf("%s: the template has %s, the pod %s", path, compact(want), compact(got))
}

// compact renders a value as short JSON (at most 120 bytes).
func compact(v any) string {
	if v == nil {
		return "nothing"
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	if len(b) > 120 {
		return string(b[:117]) + "..."
	}
	return string(b)
}

func isObject(v any) bool {
	_, ok := v.(map[string]any)
	return ok
}

// nameOf is an element's name; a port without one is keyed by its number (the API server defaults its
// protocol).
func nameOf(v any) string {
	m, _ := v.(map[string]any)
	if n, ok := m["name"].(string); ok && n != "" {
		return n
	}
	return fmt.Sprint(m["containerPort"])
}
