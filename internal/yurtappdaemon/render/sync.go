package render

import (
	"reflect"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	openyurtv1alpha1 "github.com/drover-dev/drover/api/openyurt/apps/v1alpha1"
)

// InSync reports whether live needs no write for body: live carries body's rendered-hash
// annotation, a controller ownerReference with ownerUID, and body is a semantic subset of live (apiVersion
// and kind aside, which typed objects from the cache do not carry). spec.replicas, when the body sets it,
// must be equal: drift of the managed replica count is repaired even when the count is 0.
func InSync(body *unstructured.Unstructured, live client.Object, ownerUID types.UID) bool {
	if body == nil || isNil(live) || ownerUID == "" {
		return false
	}
	want := body.GetAnnotations()[openyurtv1alpha1.AnnotationRenderedHash]
	if want == "" || live.GetAnnotations()[openyurtv1alpha1.AnnotationRenderedHash] != want {
		return false
	}
	if !hasController(live, ownerUID) {
		return false
	}
	liveMap, err := objectMap(live)
	if err != nil {
		return false
	}
	b := make(map[string]any, len(body.Object))
	for k, v := range body.Object {
		if k != "apiVersion" && k != "kind" {
			b[k] = v
		}
	}
	if !IsSubset(b, liveMap) {
		return false
	}
	if r, found, _ := unstructured.NestedFieldNoCopy(body.Object, "spec", "replicas"); found {
		l, _, _ := unstructured.NestedFieldNoCopy(liveMap, "spec", "replicas")
		if !scalarEqual(r, l, "", "") {
			return false
		}
	}
	return true
}

func isNil(o client.Object) bool {
	if o == nil {
		return true
	}
	v := reflect.ValueOf(o)
	return v.Kind() == reflect.Pointer && v.IsNil()
}

func hasController(live client.Object, uid types.UID) bool {
	for _, ref := range live.GetOwnerReferences() {
		if ref.UID == uid && ref.Controller != nil && *ref.Controller {
			return true
		}
	}
	return false
}

func objectMap(o client.Object) (map[string]any, error) {
	if u, ok := o.(*unstructured.Unstructured); ok {
		return u.Object, nil
	}
	return runtime.DefaultUnstructuredConverter.ToUnstructured(o)
}

// IsSubset reports whether body is a semantic subset of live:
//   - a field that is unset or zero in body (nil, false, 0, "", {}, []) is ignored;
//   - scalars are equal; numbers compare by value, resource quantities by value;
//   - every key of a body map is in the live map with a subset value;
//   - keyed lists (containers, env, volumes, ports, … see keyedLists) are matched item by item on their keys,
//     and extra live items are allowed;
//   - other lists have equal length and match element-wise, in order.
func IsSubset(body, live map[string]any) bool {
	return subsetMap(body, live, "")
}

func subsetMap(body, live map[string]any, parent string) bool {
	for k, bv := range body {
		var lv any
		if live != nil {
			lv = live[k]
		}
		if !subsetValue(bv, lv, k, parent) {
			return false
		}
	}
	return true
}

// subsetValue compares one body value with the live value at the same place; key is the field name of
// the value and parent the field name of the map that holds it.
func subsetValue(b, l any, key, parent string) bool {
	if isZero(b) {
		return true
	}
	switch bv := b.(type) {
	case map[string]any:
		lv, ok := l.(map[string]any)
		return ok && subsetMap(bv, lv, key)
	case []any:
		lv, ok := l.([]any)
		if !ok {
			return false
		}
		if k, keyed := keyedLists[key]; keyed {
			if match, usable := subsetKeyed(bv, lv, k, key); usable {
				return match
			}
		}
		if len(bv) != len(lv) {
			return false
		}
		for i := range bv {
			if !subsetValue(bv[i], lv[i], key, parent) {
				return false
			}
		}
		return true
	default:
		return scalarEqual(b, l, key, parent)
	}
}

// subsetKeyed matches every body item to a live item with the same key (duplicate keys, which the API
// rejects, match any of the live items with that key). usable is false when some body
// item has no key, so the caller falls back to element-wise comparison.
func subsetKeyed(body, live []any, k listKey, field string) (match, usable bool) {
	for _, item := range body {
		if _, ok := k.keyOf(item); !ok {
			return false, false
		}
	}
	for _, item := range body {
		bk, _ := k.keyOf(item)
		found := false
		for _, litem := range live {
			if lk, ok := k.keyOf(litem); ok && keysEqual(bk, lk) && subsetValue(item, litem, field, field) {
				found = true
				break
			}
		}
		if !found {
			return false, true
		}
	}
	return true, true
}

func keysEqual(a, b []any) bool {
	for i := range a {
		if !scalarEqual(a[i], b[i], "", "") {
			return false
		}
	}
	return true
}

// isZero reports whether v is unset or zero in the sense of the sync check: an unset field and its zero value are in sync.
func isZero(v any) bool {
	switch x := v.(type) {
	case nil:
		return true
	case bool:
		return !x
	case string:
		return x == ""
	case map[string]any:
		return len(x) == 0
	case []any:
		return len(x) == 0
	default:
		f, ok := toFloat(v)
		return ok && f == 0
	}
}

// scalarEqual compares two scalars: numbers by value, quantities (by field name) by value, the rest exactly.
func scalarEqual(b, l any, key, parent string) bool {
	if bf, ok := toFloat(b); ok {
		lf, ok := toFloat(l)
		return ok && bf == lf
	}
	bs, bok := b.(string)
	ls, lok := l.(string)
	if bok && lok {
		if bs == ls {
			return true
		}
		if quantityFields[key] || quantityParents[parent] {
			bq, err1 := resource.ParseQuantity(bs)
			lq, err2 := resource.ParseQuantity(ls)
			return err1 == nil && err2 == nil && bq.Cmp(lq) == 0
		}
		return false
	}
	if bb, ok := b.(bool); ok {
		lb, ok := l.(bool)
		return ok && bb == lb
	}
	return reflect.DeepEqual(b, l)
}

func toFloat(v any) (float64, bool) {
	switch x := v.(type) {
	case int:
		return float64(x), true
	case int32:
		return float64(x), true
	case int64:
		return float64(x), true
	case float32:
		return float64(x), true
	case float64:
		return x, true
	default:
		return 0, false
	}
}
