package core

import (
	"fmt"
	"math"
	"strings"
)

// MaxReservedOrdinals bounds how many ordinals ParseReserveOrdinals expands. A range such as "0-999999999"
// would otherwise allocate gigabytes on every pass; a set that large is treated as invalid, like any other
// unreadable reservation (the pass then sees no reserved ordinals, which only keeps more records).
const MaxReservedOrdinals = 1 << 20

// OrdinalOf returns the ordinal of a pod name: the text after its last '-', read as a base-10 non-negative
// integer. A name without '-', an empty suffix, a character other than a digit, or a value that does not fit
// an int has no ordinal.
func OrdinalOf(name string) (int, bool) {
	i := strings.LastIndexByte(name, '-')
	if i < 0 {
		return 0, false
	}
	return parseDigits(name[i+1:])
}

// parseDigits reads s as a base-10 non-negative integer made of ASCII digits only (no sign, no spaces).
func parseDigits(s string) (int, bool) {
	if s == "" {
		return 0, false
	}
	n := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		d := int(c - '0')
		if n > (math.MaxInt-d)/10 {
			return 0, false
		}
		n = n*10 + d
	}
	return n, true
}

// Ordinals is the set of valid ordinals of a target: the first `replicas` integers >= start that are not
// reserved. It is built once per pass and answers membership in O(1).
type Ordinals struct {
	start int
	// end is one past the largest valid ordinal: valid ordinals are the integers of [start, end) that are
	// not reserved.
	end int
	// reserved holds the reserved ordinals inside [start, end); nil when there are none.
	reserved map[int]struct{}
}

// NewOrdinals returns the valid ordinals of a target with replicas replicas, first ordinal start and the
// given reserved ordinals (duplicates and ordinals below start are ignored). replicas <= 0 gives the empty
// set; a negative start counts as 0. The cost is O(replicas + len(reserved)).
func NewOrdinals(replicas, start int32, reserved []int) Ordinals {
	if replicas <= 0 {
		return Ordinals{}
	}
	s := max(int(start), 0)
	o := Ordinals{start: s, end: s + int(replicas)}
	if len(reserved) == 0 {
		return o
	}
	all := make(map[int]struct{}, len(reserved))
	for _, r := range reserved {
		if r >= s {
			all[r] = struct{}{}
		}
	}
	// Walk up from start, skipping reserved ordinals, until replicas valid ones are counted: at most
	// replicas + len(reserved) steps. Only the reserved ordinals the walk crossed are kept.
	ord, counted := s, 0
	for counted < int(replicas) {
		if _, r := all[ord]; r {
			if o.reserved == nil {
				o.reserved = map[int]struct{}{}
			}
			o.reserved[ord] = struct{}{}
		} else {
			counted++
		}
		ord++
	}
	o.end = ord
	return o
}

// Contains reports whether ordinal is valid.
func (o Ordinals) Contains(ordinal int) bool {
	if ordinal < o.start || ordinal >= o.end {
		return false
	}
	_, r := o.reserved[ordinal]
	return !r
}

// ParseReserveOrdinals reads an Advanced StatefulSet's spec.reserveOrdinals as decoded from unstructured
// JSON. Items are integers (int64, int, int32, or a float64 with no fraction) or "a-b" strings: the inclusive
// range from a to b, spaces around the numbers trimmed, a <= b. Any invalid item (a malformed range, a > b, a
// plain numeric string, a negative number, another type) voids the whole set, which is how the Advanced
// StatefulSet controller itself reads the field: the result is nil with an error naming the first bad item.
// So does a set expanding to more than MaxReservedOrdinals ordinals.
func ParseReserveOrdinals(items []any) ([]int, error) {
	var out []int
	for i, item := range items {
		var err error
		out, err = appendReserved(out, item)
		if err != nil {
			return nil, fmt.Errorf("reserveOrdinals[%d]: %w", i, err)
		}
		if len(out) > MaxReservedOrdinals {
			return nil, fmt.Errorf("reserveOrdinals[%d]: more than %d reserved ordinals", i, MaxReservedOrdinals)
		}
	}
	return out, nil
}

// appendReserved appends the ordinals of one reserveOrdinals item to out.
func appendReserved(out []int, item any) ([]int, error) {
	if s, ok := item.(string); ok {
		lo, hi, err := parseRange(s)
		if err != nil {
			return nil, err
		}
		if hi-lo >= MaxReservedOrdinals {
			return nil, fmt.Errorf("range %q: more than %d reserved ordinals", s, MaxReservedOrdinals)
		}
		for k := 0; k <= hi-lo; k++ {
			out = append(out, lo+k)
		}
		return out, nil
	}
	n, ok := integerOf(item)
	if !ok {
		return nil, fmt.Errorf("%v (%T) is neither a non-negative integer nor an \"a-b\" range", item, item)
	}
	if n < 0 || n > math.MaxInt32 {
		return nil, fmt.Errorf("ordinal %d is out of range", n)
	}
	return append(out, int(n)), nil
}

// parseRange reads "a-b" (spaces around a and b allowed) with 0 <= a <= b <= MaxInt32 (ordinals are int32).
func parseRange(s string) (lo, hi int, err error) {
	a, b, found := strings.Cut(s, "-")
	if !found {
		return 0, 0, fmt.Errorf("%q is not an \"a-b\" range", s)
	}
	lo, okA := parseDigits(strings.TrimSpace(a))
	hi, okB := parseDigits(strings.TrimSpace(b))
	if !okA || !okB {
		return 0, 0, fmt.Errorf("%q is not an \"a-b\" range of non-negative integers", s)
	}
	if lo > hi {
		return 0, 0, fmt.Errorf("range %q starts after its end", s)
	}
	if hi > math.MaxInt32 {
		return 0, 0, fmt.Errorf("range %q is out of range", s)
	}
	return lo, hi, nil
}

// integerOf returns the integer value of a number decoded from JSON: an integer type, or a finite float64
// with no fraction that fits an int64.
func integerOf(v any) (int64, bool) {
	switch n := v.(type) {
	case int64:
		return n, true
	case int:
		return int64(n), true
	case int32:
		return int64(n), true
	case float64:
		if math.IsNaN(n) || math.IsInf(n, 0) || n != math.Trunc(n) || n < math.MinInt64 || n >= math.MaxInt64 {
			return 0, false
		}
		return int64(n), true
	}
	return 0, false
}

// ReplicasAt reads a non-negative integer at a dotted path ("spec.replicas", "spec.size") of an unstructured
// object. An integer, or a float with no fraction, is used as is. A missing field or map on the way, a value
// of another type, a fraction, a negative value or one beyond int32 give 0 and ok=false: never an error,
// never a panic.
func ReplicasAt(obj map[string]any, path string) (replicas int32, ok bool) {
	if obj == nil || path == "" {
		return 0, false
	}
	var cur any = obj
	for field := range strings.SplitSeq(path, ".") {
		m, isMap := cur.(map[string]any)
		if !isMap {
			return 0, false
		}
		if cur, ok = m[field]; !ok {
			return 0, false
		}
	}
	n, isInt := integerOf(cur)
	if !isInt || n < 0 || n > math.MaxInt32 {
		return 0, false
	}
	return int32(n), true
}
