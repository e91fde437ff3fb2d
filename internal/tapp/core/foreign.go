package core

import (
	"fmt"
	"reflect"

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

// specMatchesExceptImages reports whether everything desired's spec says is in live's spec, images aside.
// It reports false when either spec cannot be converted.
func specMatchesExceptImages(live, desired *corev1.Pod) bool {
	l, err := runtime.DefaultUnstructuredConverter.ToUnstructured(withoutImages(&live.Spec))
	if err != nil {
		return false
	}
	d, err := runtime.DefaultUnstructuredConverter.ToUnstructured(withoutImages(&desired.Spec))
	if err != nil {
		return false
	}
	return subsetOf(d, l, "")
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

// subsetOf reports whether want (a value of the desired spec) is contained in got (the live one's); key is
// the field name of the value ("containers[]" for an element of containers), which decides how a list is
// matched and which fields must not be set in got alone.
func subsetOf(want, got any, key string) bool {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return len(w) == 0 && got == nil
		}
		for k, v := range w {
			if !subsetOf(v, g[k], k) {
				return false
			}
		}
		if key == "containers[]" || key == "initContainers[]" {
			for _, k := range exactFields {
				if _, set := w[k]; !set && g[k] != nil {
					return false
				}
			}
		}
		return true
	case []any:
		g, _ := got.([]any)
		return listSubsetOf(w, g, key)
	case nil:
		return true
	default:
		return reflect.DeepEqual(want, got)
	}
}

func listSubsetOf(want, got []any, key string) bool {
	if len(want) > 0 && !isObject(want[0]) {
		return reflect.DeepEqual(want, got) // command, args, ...
	}
	if nameKeyedLists[key] {
		byName := map[string]any{}
		for _, g := range got {
			byName[nameOf(g)] = g
		}
		for _, w := range want {
			g, ok := byName[nameOf(w)]
			if !ok || !subsetOf(w, g, key+"[]") {
				return false
			}
		}
		return !exactLists[key] || len(got) == len(want)
	}
	for _, w := range want {
		found := false
		for _, g := range got {
			if subsetOf(w, g, key+"[]") {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
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
