package e2e

// The admission fuzz's TApp: seeds from the sample and the tutorial manifests, and the mutations of its
// instance maps, template pool, budgets and claims.

import (
	"encoding/json"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	tkestackv1 "github.com/drover-dev/drover/api/tkestack/apps/v1"
)

// tappSeeds reads the TApp sample and the TApps of the tutorial manifests, with at most two replicas each
// (the pods of admitted TApps run on the fake nodes).
func tappSeeds(root string) ([]jsonObj, error) {
	files := []string{filepath.Join(root, "config", "samples", "tapp.yaml")}
	tutorial, err := filepath.Glob(filepath.Join(root, tutorialDir, "*.yaml"))
	if err != nil {
		return nil, err
	}
	var out []jsonObj
	for _, f := range append(files, tutorial...) {
		objs, err := readManifest(f)
		if err != nil {
			return nil, err
		}
		for _, o := range objs {
			if o["kind"] != "TApp" {
				continue
			}
			spec := ensureObj(o, "spec")
			if n, err := strconv.Atoi(string(spec["replicas"].(json.Number))); err == nil && n > 2 {
				spec["replicas"] = json.Number("2")
			}
			out = append(out, o)
		}
	}
	return out, nil
}

func tappFuzzKind(seeds []jsonObj) *fuzzKind {
	strategy := jsonPath{"spec", "updateStrategy"}
	return &fuzzKind{
		kind: "TApp", abbr: "tapp", resource: "tapps", groupVersion: tkestackv1.GroupVersion.String(), namespaced: true,
		controllers: []string{"tapp"},
		seeds:       seeds,
		mutations: append(containerMutations("/spec/template/", true),
			mutation{"bad-label", mutBadLabel},
			mutIntOrString(jsonPath{"spec"}, strategy.child("maxUnavailable"), strategy.child("forceUpdate").child("maxUnavailable")),
			mutation{"bad-statuses", mutInstanceMap("statuses", tappStatusValues, validStatus)},
			mutation{"bad-templates", mutInstanceMap("templates", []any{"missing", "", json.Number("5")}, func(v any) bool { return v != "missing" && jsonType(v) == "string" })},
			mutation{"bad-template-pool", mutTemplatePool},
			mutation{"bad-replicas", mutSet(jsonPath{"spec", "replicas"}, json.Number("-1"), json.Number("50001"),
				json.Number("2147483648"), "1", json.Number("1.5"), true)},
			mutation{"bad-default-template", func(_ *fuzzGen, o jsonObj) (change, bool) {
				spec := ensureObj(o, "spec")
				delete(spec, "DefaultTemplateName") // the alias, which defaulting folds into defaultTemplateName
				spec["defaultTemplateName"] = "missing"
				return describe("default-template", jsonPath{"spec", "defaultTemplateName"}, "missing", true), true
			}},
			mutation{"selector-mismatch", func(g *fuzzGen, o jsonObj) (change, bool) {
				v := jsonObj{"matchLabels": jsonObj{"app": "other-" + g.randString(4)}}
				ensureObj(o, "spec")["selector"] = v
				return describe("selector", jsonPath{"spec", "selector"}, v, true), true
			}},
			mutation{"bad-claim", mutClaim},
		),
		validEdits: []mutation{
			{"edit-image", func(g *fuzzGen, o jsonObj) (change, bool) {
				p := jsonPath{"spec", "template", "spec", "containers", 0, "image"}
				v := pick(g, []string{"nginx:1.7.9", "nginx:latest", "nginx:1.27"})
				return describe("edit", p, v, false), setPath(o, p, v)
			}},
			{"edit-kill", func(g *fuzzGen, o jsonObj) (change, bool) {
				v := pick(g, []string{"Killed", "Running"})
				ensureObj(o, "spec", "statuses")["0"] = v
				return describe("edit", jsonPath{"spec", "statuses", "0"}, v, false), true
			}},
			{"edit-replicas", func(g *fuzzGen, o jsonObj) (change, bool) {
				v := json.Number(strconv.Itoa(g.intn(3)))
				ensureObj(o, "spec")["replicas"] = v
				return describe("edit", jsonPath{"spec", "replicas"}, v, false), true
			}},
		},
		nudge: func(_ jsonObj, round int) jsonObj {
			return jsonObj{"metadata": jsonObj{"annotations": jsonObj{fuzzNudgeKey: strconv.Itoa(round)}}}
		},
	}
}

// Instance ids for the TApp maps: canonical ones and ones that are not (sign, leading zero, letters, beyond
// the largest id, blank).
var (
	tappIDs          = []string{"0", "1", "-1", "01", "abc", "2147483646", "2147483647", "9999999999", "", " 1"}
	tappStatusValues = []any{"Killed", "Running", "Bogus", "killed", json.Number("5"), nil}
)

// canonicalID says whether id is an instance id as the TApp API writes them: a decimal without sign or
// leading zero, at most tkestackv1.MaxInstanceID.
func canonicalID(id string) bool {
	n, err := strconv.ParseInt(id, 10, 64)
	return err == nil && n >= 0 && n <= tkestackv1.MaxInstanceID && strconv.FormatInt(n, 10) == id
}

func validStatus(v any) bool { return v == "Killed" || v == "Running" }

// mutInstanceMap sets an entry of spec.<field> (an instance id → value map); the change is certainly invalid
// when the id is not canonical or validValue refuses the value, unless the value is null (an entry the
// API server may drop).
func mutInstanceMap(field string, values []any, validValue func(any) bool) func(g *fuzzGen, o jsonObj) (change, bool) {
	return func(g *fuzzGen, o jsonObj) (change, bool) {
		id, v := pick(g, tappIDs), pick(g, values)
		if field == "templates" && g.chance(0.3) {
			if pools := tappPoolNames(o); len(pools) > 0 {
				v = pick(g, pools)
			}
		}
		ensureObj(o, "spec", field)[id] = v
		return describe(field, jsonPath{"spec", field, id}, v, v != nil && (!canonicalID(id) || !validValue(v))), true
	}
}

// tappPoolNames returns the names of the TApp's template pool, sorted.
func tappPoolNames(o jsonObj) []string {
	pool, _ := getPath(o, jsonPath{"spec", "templatePool"})
	m, _ := pool.(jsonObj)
	names := make([]string, 0, len(m))
	for k := range m {
		names = append(names, k)
	}
	slices.Sort(names)
	return names
}

// mutTemplatePool adds a template pool entry with an odd name or an odd template.
func mutTemplatePool(g *fuzzGen, o jsonObj) (change, bool) {
	name := pick(g, []string{"Bad Key", "", strings.Repeat("t", 300), "pool-" + g.randString(3)})
	main, _ := getPath(o, jsonPath{"spec", "template"})
	v := pick(g, []any{cloneJSON(main), "x", jsonObj{}, jsonObj{"spec": jsonObj{}}, jsonObj{"metadata": jsonObj{"labels": "x"}}})
	ensureObj(o, "spec", "templatePool")[name] = v
	return describe("template-pool", jsonPath{"spec", "templatePool", name}, v, false), true
}

// mutClaim adds a volume claim template with a name that is no DNS label, and sometimes a bad quantity.
func mutClaim(g *fuzzGen, o jsonObj) (change, bool) {
	storage := pick(g, []string{"1Gi", "abc", "1.5.5"})
	claim := jsonObj{
		"metadata": jsonObj{"name": pick(g, []string{"Bad_Name", "", strings.Repeat("d", 300), "data.x"})},
		"spec": jsonObj{
			"accessModes": []any{"ReadWriteOnce"},
			"resources":   jsonObj{"requests": jsonObj{"storage": storage}},
		},
	}
	claims, _ := getPath(o, jsonPath{"spec", "volumeClaimTemplates"})
	l, _ := claims.([]any)
	ensureObj(o, "spec")["volumeClaimTemplates"] = append(l, claim)
	return describe("claim", jsonPath{"spec", "volumeClaimTemplates", len(l)}, claim, true), true
}
