package e2e

// The admission fuzz's generator, part 2: the mutations. Each returns what it did (a change) or false when
// the object has nothing it could mutate. A change marked invalid makes an object that every correct
// admission chain denies, whatever else it holds: admitting it is a finding.

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// change is what one mutation did to an object.
type change struct {
	Mutation string
	// Path is the JSON pointer of the node the mutation changed.
	Path    string
	Desc    string
	Invalid bool
}

// overlaps says whether two JSON pointers address the same node or one holds the other.
func overlaps(a, b string) bool {
	return a == b || strings.HasPrefix(a, b+"/") || strings.HasPrefix(b, a+"/")
}

func (c change) String() string { return c.Mutation + " " + c.Desc }

type mutation struct {
	name string
	// apply mutates o; false when o has no node the mutation applies to.
	apply func(g *fuzzGen, o jsonObj) (change, bool)
}

// describe builds the change of a mutation that put v at p.
func describe(name string, p jsonPath, v any, invalid bool) change {
	return change{Mutation: name, Path: p.String(), Desc: p.String() + " = " + short(v), Invalid: invalid}
}

// genericMutations fit every kind: they pick a random mutable node.
var genericMutations = []mutation{
	{"retype", mutRetype},
	{"bad-number", mutBadNumber},
	{"delete", mutDelete},
	{"blank", mutBlank},
	{"long-string", mutLongString},
	{"unknown-field", mutUnknownField},
	{"duplicate-item", mutDuplicateItem},
	{"many-items", mutManyItems},
	{"junk-status", mutJunkStatus},
}

func mutRetype(g *fuzzGen, o jsonObj) (change, bool) {
	p, ok := g.pickPath(o, nil)
	if !ok {
		return change{}, false
	}
	old, _ := getPath(o, p)
	v := g.valueOfOtherType(old)
	setPath(o, p, v)
	return describe("retype", p, v, false), true
}

func mutBadNumber(g *fuzzGen, o jsonObj) (change, bool) {
	isNumber := func(_ jsonPath, v any) bool { return jsonType(v) == "number" }
	p, ok := g.pickPath(o, isNumber)
	if !ok {
		if p, ok = g.pickPath(o, nil); !ok {
			return change{}, false
		}
	}
	v := pick(g, badNumbers)
	setPath(o, p, v)
	return describe("bad-number", p, v, false), true
}

func mutDelete(g *fuzzGen, o jsonObj) (change, bool) {
	p, ok := g.pickPath(o, nil)
	if !ok || !deletePath(o, p) {
		return change{}, false
	}
	return change{Mutation: "delete", Path: p.String(), Desc: p.String()}, true
}

func mutBlank(g *fuzzGen, o jsonObj) (change, bool) {
	p, ok := g.pickPath(o, nil)
	if !ok {
		return change{}, false
	}
	old, _ := getPath(o, p)
	v := blankOf(old)
	setPath(o, p, v)
	return describe("blank", p, v, false), true
}

func mutLongString(g *fuzzGen, o jsonObj) (change, bool) {
	isString := func(_ jsonPath, v any) bool { _, ok := v.(string); return ok }
	p, ok := g.pickPath(o, isString)
	if !ok {
		return change{}, false
	}
	v := g.randString(pick(g, longLengths))
	setPath(o, p, v)
	return describe("long-string", p, v, false), true
}

func mutUnknownField(g *fuzzGen, o jsonObj) (change, bool) {
	isObject := func(p jsonPath, v any) bool { _, ok := v.(jsonObj); return ok && p[0] != "metadata" }
	p, ok := g.pickPath(o, isObject)
	if !ok {
		p = jsonPath{"spec"}
	}
	parent, _ := getPath(o, p)
	m, ok := parent.(jsonObj)
	if !ok {
		return change{}, false
	}
	key := "fuzzUnknown" + g.randString(3)
	m[key] = g.valueOfOtherType(nil)
	return describe("unknown-field", p.child(key), m[key], false), true
}

func nonEmptyList(_ jsonPath, v any) bool { l, ok := v.([]any); return ok && len(l) > 0 }

func mutDuplicateItem(g *fuzzGen, o jsonObj) (change, bool) {
	p, ok := g.pickPath(o, nonEmptyList)
	if !ok {
		return change{}, false
	}
	l, _ := getPath(o, p)
	items := l.([]any)
	i := g.intn(len(items))
	setPath(o, p, append(slices.Clone(items), cloneJSON(items[i])))
	return change{Mutation: "duplicate-item", Path: p.String(), Desc: fmt.Sprintf("%s/%d appended again", p, i)}, true
}

func mutManyItems(g *fuzzGen, o jsonObj) (change, bool) {
	p, ok := g.pickPath(o, nonEmptyList)
	if !ok {
		return change{}, false
	}
	l, _ := getPath(o, p)
	items := l.([]any)
	n := pick(g, []int{30, 120})
	out := make([]any, 0, n)
	for len(out) < n {
		out = append(out, cloneJSON(items[len(out)%len(items)]))
	}
	setPath(o, p, out)
	return change{Mutation: "many-items", Path: p.String(), Desc: fmt.Sprintf("%s repeated to %d items", p, n)}, true
}

func mutJunkStatus(g *fuzzGen, o jsonObj) (change, bool) {
	v := pick(g, []any{"x", json.Number("5"), []any{}, jsonObj{"replicas": "x"}, jsonObj{"conditions": "x"}})
	o["status"] = v
	return describe("junk-status", jsonPath{"status"}, v, false), true
}

// cloneJSON deep-copies a JSON value.
func cloneJSON(v any) any {
	switch v := v.(type) {
	case jsonObj:
		out := make(jsonObj, len(v))
		for k, x := range v {
			out[k] = cloneJSON(x)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, x := range v {
			out[i] = cloneJSON(x)
		}
		return out
	}
	return v
}

// containerLists returns the paths of the containers and initContainers lists under o.
func containerLists(o jsonObj) []jsonPath {
	var out []jsonPath
	walkJSON(o, nil, func(p jsonPath) bool { return !mutable(p) }, func(p jsonPath, v any) {
		if k := p.last(); (k == "containers" || k == "initContainers") && nonEmptyList(p, v) {
			out = append(out, p)
		}
	})
	return out
}

// pickContainer returns a random container of o and whether it belongs to a template under mainPrefix (the
// template the object's pods are made from, where an invalid container is certainly invalid).
func (g *fuzzGen) pickContainer(o jsonObj, mainPrefix string) (jsonPath, jsonObj, bool, bool) {
	lists := containerLists(o)
	if len(lists) == 0 {
		return nil, nil, false, false
	}
	lp := pick(g, lists)
	l, _ := getPath(o, lp)
	i := g.intn(len(l.([]any)))
	p := lp.child(i)
	c, ok := l.([]any)[i].(jsonObj)
	return p, c, strings.HasPrefix(p.String(), mainPrefix), ok
}

// containerMutations are the mutations of pod templates; mainPrefix is the JSON pointer of the template the
// object's pods are made from, podsDirect says whether its controller creates the pods itself (rather than
// through a workload whose API accepts what only a pod refuses, like blanks around an image).
func containerMutations(mainPrefix string, podsDirect bool) []mutation {
	return []mutation{
		{"bad-quantity", func(g *fuzzGen, o jsonObj) (change, bool) {
			p, c, _, ok := g.pickContainer(o, mainPrefix)
			if !ok {
				return change{}, false
			}
			key := []string{pick(g, []string{"limits", "requests"}), pick(g, []string{"cpu", "memory"})}
			v := pick(g, []string{"abc", "1.5.5", "12Qi", "1 Gi", "--1"})
			ensureObj(c, "resources", key[0])[key[1]] = v
			return describe("bad-quantity", p.child("resources").child(key[0]).child(key[1]), v, true), true
		}},
		{"bad-container-name", func(g *fuzzGen, o jsonObj) (change, bool) {
			p, c, main, ok := g.pickContainer(o, mainPrefix)
			if !ok {
				return change{}, false
			}
			v := pick(g, []string{"Bad_Name", "", strings.Repeat("c", 64), "UPPER", "a.b"})
			c["name"] = v
			return describe("bad-container-name", p.child("name"), v, main), true
		}},
		{"bad-image", mutBadImage(mainPrefix, podsDirect)},
		{"duplicate-container", func(g *fuzzGen, o jsonObj) (change, bool) {
			p, c, main, ok := g.pickContainer(o, mainPrefix)
			if !ok {
				return change{}, false
			}
			lp := p[:len(p)-1]
			l, _ := getPath(o, lp)
			setPath(o, lp, append(slices.Clone(l.([]any)), cloneJSON(c)))
			return change{Mutation: "duplicate-container", Path: lp.String(), Desc: p.String() + " twice", Invalid: main}, true
		}},
	}
}

// mutBadImage removes a container's image, blanks it, or sets one with surrounding blanks.
func mutBadImage(mainPrefix string, podsDirect bool) func(g *fuzzGen, o jsonObj) (change, bool) {
	return func(g *fuzzGen, o jsonObj) (change, bool) {
		p, c, main, ok := g.pickContainer(o, mainPrefix)
		if !ok {
			return change{}, false
		}
		if g.chance(0.5) {
			delete(c, "image")
			return change{Mutation: "bad-image", Path: p.child("image").String(), Desc: p.String() + "/image removed", Invalid: main}, true
		}
		v := pick(g, []string{"", " nginx", "nginx:1.27 ", "\tnginx"})
		c["image"] = v
		return describe("bad-image", p.child("image"), v, main && (v == "" || podsDirect)), true
	}
}

// Bad label keys and values: every one breaks the syntax of labels.
var (
	badLabelKeys   = []string{"-bad", "a/b/c", "Bad Key", strings.Repeat("k", 64), "fuzz.drover.dev/" + strings.Repeat("k", 64), "", "/x", "UPPER.example/x"}
	badLabelValues = []string{"bad value", "-x", strings.Repeat("v", 64), "ünï", "x_"}
)

// mutBadLabel puts a bad key or value into a label map: the object's labels or a map called labels or
// matchLabels anywhere under it (pod templates, selectors, a NodePool's node labels).
func mutBadLabel(g *fuzzGen, o jsonObj) (change, bool) {
	var maps []jsonPath
	walkJSON(o, nil, func(p jsonPath) bool { return !mutable(p) }, func(p jsonPath, v any) {
		if _, ok := v.(jsonObj); ok && (p.last() == "labels" || p.last() == "matchLabels") {
			maps = append(maps, p)
		}
	})
	p := jsonPath{"metadata", "labels"}
	if len(maps) > 0 && g.chance(0.8) {
		p = pick(g, maps)
	}
	m := ensurePath(o, p)
	// Defaulting copies a YurtAppDaemon's spec.selector over its template member's.
	invalid := !strings.HasPrefix(p.String(), "/spec/workloadTemplate/") || !strings.HasSuffix(p.String(), "/spec/selector/matchLabels")
	if g.chance(0.5) {
		k := pick(g, badLabelKeys)
		m[k] = "x"
		return describe("bad-label-key", p, k, invalid), true
	}
	v := pick(g, badLabelValues)
	m["fuzz.drover.dev/bad"] = v
	return describe("bad-label-value", p.child("fuzz.drover.dev/bad"), v, invalid), true
}

// ensurePath is ensureObj for a path of string keys.
func ensurePath(o jsonObj, p jsonPath) jsonObj {
	keys := make([]string, 0, len(p))
	for _, s := range p {
		k, _ := s.(string)
		keys = append(keys, k)
	}
	return ensureObj(o, keys...)
}

// badIntOrString are values that no int-or-string budget accepts.
var badIntOrString = []any{"abc%", json.Number("-1"), json.Number("1.5"), "150%", "%", "1.5%", true, "-5%"}

// mutIntOrString sets one of the int-or-string budgets at paths (created when missing) to a bad value, when
// the object has the node at require: a budget of a template member the object does not use would add that
// member.
func mutIntOrString(require jsonPath, paths ...jsonPath) mutation {
	return mutation{"bad-int-or-string", func(g *fuzzGen, o jsonObj) (change, bool) {
		if _, ok := getPath(o, require); !ok {
			return change{}, false
		}
		p := pick(g, paths)
		ensurePath(o, p[:len(p)-1])
		v := pick(g, badIntOrString)
		setPath(o, p, v)
		surge := p.last() == "maxSurge" && v == "150%" // a surge may exceed 100%
		return describe("bad-int-or-string", p, v, !surge), true
	}}
}
