package e2e

// The admission fuzz's generator, part 1: the JSON tree the mutations work on and the mutations that fit
// every kind. Objects are raw JSON (jsonObj, numbers as json.Number) so that a mutation can put any JSON type
// anywhere, which no typed client can encode.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
)

type jsonObj = map[string]any

// jsonPath addresses a node of a JSON tree: string keys and int indices.
type jsonPath []any

// String is the JSON pointer of the path.
func (p jsonPath) String() string {
	var b strings.Builder
	for _, s := range p {
		b.WriteByte('/')
		switch s := s.(type) {
		case string:
			b.WriteString(strings.NewReplacer("~", "~0", "/", "~1").Replace(s))
		case int:
			b.WriteString(strconv.Itoa(s))
		}
	}
	return b.String()
}

func (p jsonPath) last() any {
	if len(p) == 0 {
		return nil
	}
	return p[len(p)-1]
}

// child returns p extended by one key or index, without sharing p's backing array.
func (p jsonPath) child(s any) jsonPath { return append(slices.Clip(p), s) }

// decodeJSON decodes data keeping numbers as json.Number, so that integers beyond float64 survive.
func decodeJSON(data []byte) (jsonObj, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var o jsonObj
	if err := dec.Decode(&o); err != nil {
		return nil, err
	}
	return o, nil
}

// toJSONObj converts a typed object (or a jsonObj) to a fresh jsonObj.
func toJSONObj(v any) jsonObj {
	data, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("admission fuzz: encoding %T: %v", v, err))
	}
	o, err := decodeJSON(data)
	if err != nil {
		panic(fmt.Sprintf("admission fuzz: decoding %T: %v", v, err))
	}
	return o
}

// getPath returns the node at p.
func getPath(root any, p jsonPath) (any, bool) {
	cur := root
	for _, s := range p {
		switch node := cur.(type) {
		case jsonObj:
			k, ok := s.(string)
			if !ok {
				return nil, false
			}
			if cur, ok = node[k]; !ok {
				return nil, false
			}
		case []any:
			i, ok := s.(int)
			if !ok || i < 0 || i >= len(node) {
				return nil, false
			}
			cur = node[i]
		default:
			return nil, false
		}
	}
	return cur, true
}

// setPath replaces (or, in an object, adds) the node at p; the parent must exist. It reports whether it did.
func setPath(root any, p jsonPath, v any) bool {
	if len(p) == 0 {
		return false
	}
	parent, ok := getPath(root, p[:len(p)-1])
	if !ok {
		return false
	}
	switch node := parent.(type) {
	case jsonObj:
		k, ok := p.last().(string)
		if ok {
			node[k] = v
		}
		return ok
	case []any:
		i, ok := p.last().(int)
		if ok && i >= 0 && i < len(node) {
			node[i] = v
			return true
		}
	}
	return false
}

// deletePath removes the node at p: a key of an object or an item of a list.
func deletePath(root any, p jsonPath) bool {
	if len(p) == 0 {
		return false
	}
	parent, ok := getPath(root, p[:len(p)-1])
	if !ok {
		return false
	}
	switch node := parent.(type) {
	case jsonObj:
		k, _ := p.last().(string)
		_, had := node[k]
		delete(node, k)
		return had
	case []any:
		i, ok := p.last().(int)
		if !ok || i < 0 || i >= len(node) {
			return false
		}
		return setPath(root, p[:len(p)-1], slices.Delete(slices.Clone(node), i, i+1))
	}
	return false
}

// ensureObj returns the object at the keys under root, creating (or replacing non-objects by) empty objects
// on the way.
func ensureObj(root jsonObj, keys ...string) jsonObj {
	cur := root
	for _, k := range keys {
		next, ok := cur[k].(jsonObj)
		if !ok {
			next = jsonObj{}
			cur[k] = next
		}
		cur = next
	}
	return cur
}

// walkJSON calls visit for every node under v (v itself excluded), objects' keys in sorted order so that a
// seed gives the same paths every time. It does not descend into nodes for which skip returns true.
func walkJSON(v any, p jsonPath, skip func(jsonPath) bool, visit func(jsonPath, any)) {
	switch node := v.(type) {
	case jsonObj:
		keys := make([]string, 0, len(node))
		for k := range node {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			walkChild(node[k], p.child(k), skip, visit)
		}
	case []any:
		for i, item := range node {
			walkChild(item, p.child(i), skip, visit)
		}
	}
}

func walkChild(v any, p jsonPath, skip func(jsonPath) bool, visit func(jsonPath, any)) {
	if skip != nil && skip(p) {
		return
	}
	visit(p, v)
	walkJSON(v, p, skip, visit)
}

// mutable says whether a generic mutation may touch p: not apiVersion, kind, status, or the metadata the
// request depends on (name, namespace, resourceVersion, managed fields); metadata labels and annotations are
// fair game.
func mutable(p jsonPath) bool {
	switch p[0] {
	case "apiVersion", "kind", "status":
		return false
	case "metadata":
		return len(p) == 1 || p[1] == "labels" || p[1] == "annotations"
	}
	return true
}

// jsonType names the JSON type of v.
func jsonType(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "string"
	case json.Number, float64, int64:
		return "number"
	case bool:
		return "bool"
	case jsonObj:
		return "object"
	case []any:
		return "array"
	}
	return fmt.Sprintf("%T", v)
}

// short renders v as compact JSON of at most 60 bytes, for messages.
func short(v any) string {
	data, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("%v", v)
	}
	if len(data) > 60 {
		return fmt.Sprintf("%s… (%d bytes)", data[:50], len(data))
	}
	return string(data)
}

// fuzzGen is the seeded source of every random choice of one run.
type fuzzGen struct {
	rng *rand.Rand
}

func newFuzzGen(seed uint64) *fuzzGen {
	return &fuzzGen{rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}
}

func (g *fuzzGen) intn(n int) int        { return g.rng.IntN(n) }
func (g *fuzzGen) chance(p float64) bool { return g.rng.Float64() < p }

func pick[T any](g *fuzzGen, items []T) T { return items[g.intn(len(items))] }

// pickPath returns a random mutable path under o whose node satisfies want, or false when there is none.
func (g *fuzzGen) pickPath(o jsonObj, want func(jsonPath, any) bool) (jsonPath, bool) {
	var paths []jsonPath
	walkJSON(o, nil, func(p jsonPath) bool { return !mutable(p) }, func(p jsonPath, v any) {
		if want == nil || want(p, v) {
			paths = append(paths, p)
		}
	})
	if len(paths) == 0 {
		return nil, false
	}
	return pick(g, paths), true
}

// fuzzLetters has no "p": a generated string never spells "panic", which the manager's log is searched for.
const fuzzLetters = "abcdefghijklmnoqrstuvwxyz0123456789"

// randString returns n random lower-case letters and digits.
func (g *fuzzGen) randString(n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = fuzzLetters[g.intn(len(fuzzLetters))]
	}
	return string(b)
}

// Values the mutations draw from.
var (
	// badNumbers: fractions where integers are expected, beyond int32 and int64, negative.
	badNumbers = []json.Number{"1.5", "-1", "2147483648", "-2147483649", "9223372036854775808", "1e30", "0.0001"}
	// junkStrings: not numbers, not quantities, not times, not enum values.
	junkStrings = []string{"x", "", "12Qi", "abc%", "yesterday", "true", "-1", " ", "null", "{}"}
	longLengths = []int{64, 254, 1000, 20000}
)

// valueOfOtherType returns a value whose JSON type differs from old's.
func (g *fuzzGen) valueOfOtherType(old any) any {
	for {
		var v any
		switch g.intn(6) {
		case 0:
			v = pick(g, junkStrings)
		case 1:
			v = pick(g, badNumbers)
		case 2:
			v = g.chance(0.5)
		case 3:
			v = pick(g, []jsonObj{{}, {"fuzz": "x"}, {"a": jsonObj{"b": []any{}}}})
		case 4:
			v = pick(g, [][]any{{}, {"x"}, {jsonObj{}}, {json.Number("1"), nil}})
		default:
			v = nil
		}
		if jsonType(v) != jsonType(old) {
			return v
		}
	}
}

// blankOf returns the empty value of old's JSON type.
func blankOf(old any) any {
	switch old.(type) {
	case string:
		return ""
	case json.Number, float64, int64:
		return json.Number("0")
	case bool:
		return false
	case jsonObj:
		return jsonObj{}
	case []any:
		return []any{}
	}
	return nil
}
