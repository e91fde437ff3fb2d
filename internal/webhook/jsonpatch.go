package webhook

import (
	"fmt"
	"strconv"
	"strings"

	"gomodules.xyz/jsonpatch/v2"
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

// pointerSegments splits a JSON pointer into its unescaped segments and its escaped ones (to join again).
func pointerSegments(pointer string) (segs, escaped []string) {
	escaped = strings.Split(strings.TrimPrefix(pointer, "/"), "/")
	segs = make([]string, len(escaped))
	for i, s := range escaped {
		segs[i] = strings.ReplaceAll(strings.ReplaceAll(s, "~1", "/"), "~0", "~")
	}
	return segs, escaped
}

// child returns the value of seg in the container node, and whether node is a container holding it.
func child(node any, seg string) (any, bool) {
	switch p := node.(type) {
	case map[string]any:
		v, ok := p[seg]
		return v, ok
	case []any:
		i, err := strconv.Atoi(seg)
		if err != nil || i < 0 || i >= len(p) {
			return nil, false
		}
		return p[i], true
	}
	return nil, false
}

// isContainer reports whether v is a JSON object or list.
func isContainer(v any) bool {
	switch v.(type) {
	case map[string]any, []any:
		return true
	}
	return false
}

// plannedOp is one operation of a patch, where it lands in the document it is applied to: the number of its
// segments that exist there, and whether the deepest existing value is a container.
type plannedOp struct {
	op              string
	segs, escaped   []string
	depth           int
	containerAtEdge bool
}

// planOps locates each operation of ops (pointers into a document shaped like doc) in doc, before any of
// them is applied.
func planOps(doc any, ops []jsonpatch.JsonPatchOperation) []plannedOp {
	out := make([]plannedOp, 0, len(ops))
	for _, op := range ops {
		segs, escaped := pointerSegments(op.Path)
		p := plannedOp{op: op.Operation, segs: segs, escaped: escaped}
		node := doc
		for _, s := range segs {
			next, ok := child(node, s)
			if !ok {
				break
			}
			node = next
			p.depth++
		}
		p.containerAtEdge = isContainer(node)
		out = append(out, p)
	}
	return out
}

// exactOps turns planned operations, which applyPatchOperation applied to the document they were planned on
// (creating missing parents, ignoring removals of what is absent), into RFC 6902 operations that take that
// document to patched: an add or replace becomes one add of the first missing segment's subtree, or a
// replace of the deepest existing value when it cannot hold a child (a null or a scalar), or a replace of the
// value itself; a removal of something absent is dropped; an operation inside a subtree already written is
// covered by it. Values are taken from patched. It reports false when a value is missing from patched.
func exactOps(planned []plannedOp, patched any) ([]jsonpatch.JsonPatchOperation, bool) {
	out := make([]jsonpatch.JsonPatchOperation, 0, len(planned))
	var written []string
	covered := func(path string) bool {
		for _, w := range written {
			if path == w || strings.HasPrefix(path, w+"/") {
				return true
			}
		}
		return false
	}
	for _, p := range planned {
		if p.op == "remove" {
			path := "/" + strings.Join(p.escaped, "/")
			if p.depth == len(p.segs) && !covered(path) {
				out = append(out, jsonpatch.NewOperation("remove", path, nil))
			}
			continue
		}
		n, verb := len(p.segs), "replace"
		switch {
		case p.depth < len(p.segs) && p.containerAtEdge:
			n, verb = p.depth+1, "add"
		case p.depth < len(p.segs):
			n = p.depth
		}
		path := "/" + strings.Join(p.escaped[:n], "/")
		if n == 0 || covered(path) {
			continue
		}
		value := patched
		for _, s := range p.segs[:n] {
			var ok bool
			if value, ok = child(value, s); !ok {
				return nil, false
			}
		}
		out = append(out, jsonpatch.NewOperation(verb, path, value))
		written = append(written, path)
	}
	return out, true
}
