package webhook

import (
	"fmt"
	"strconv"
	"strings"
)

// applyPatchOperation applies one JSON patch operation (add, replace or remove) at a JSON pointer to doc,
// creating missing (or null) parent objects for add and replace. In lists only existing elements can be
// replaced or descended into.
func applyPatchOperation(doc any, op, pointer string, value any) (any, error) {
	if pointer == "" || pointer[0] != '/' {
		return doc, fmt.Errorf("unsupported JSON pointer %q", pointer)
	}
	segs := strings.Split(pointer[1:], "/")
	for i, s := range segs {
		segs[i] = strings.ReplaceAll(strings.ReplaceAll(s, "~1", "/"), "~0", "~")
	}
	if op != "add" && op != "replace" && op != "remove" {
		return doc, fmt.Errorf("unsupported JSON patch operation %q", op)
	}
	parent := doc
	for _, s := range segs[:len(segs)-1] {
		switch p := parent.(type) {
		case map[string]any:
			next, exists := p[s]
			if !exists || next == nil {
				if op == "remove" {
					return doc, nil // nothing to remove
				}
				next = map[string]any{}
				p[s] = next
			}
			parent = next
		case []any:
			i, err := strconv.Atoi(s)
			if err != nil || i < 0 || i >= len(p) {
				return doc, fmt.Errorf("%s: no list element %q", pointer, s)
			}
			parent = p[i]
		default:
			return doc, fmt.Errorf("%s: cannot descend into %T", pointer, parent)
		}
	}
	last := segs[len(segs)-1]
	switch p := parent.(type) {
	case map[string]any:
		if op == "remove" {
			delete(p, last)
		} else {
			p[last] = value
		}
		return doc, nil
	case []any:
		i, err := strconv.Atoi(last)
		if op != "replace" || err != nil || i < 0 || i >= len(p) {
			return doc, fmt.Errorf("%s: only existing list elements can be replaced", pointer)
		}
		p[i] = value
		return doc, nil
	default:
		return doc, fmt.Errorf("%s: cannot set a field of %T", pointer, parent)
	}
}
