package e2e

// The admission fuzz's YurtAppDaemon and UnitedDaemonSet: seeds and the mutations of their selectors,
// template members and tweaks.

import (
	"encoding/json"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"

	openyurtv1alpha1 "github.com/drover-dev/drover/api/openyurt/apps/v1alpha1"
	openyurtv1beta1 "github.com/drover-dev/drover/api/openyurt/apps/v1beta1"
)

func rawJSON(s string) *runtime.RawExtension { return &runtime.RawExtension{Raw: []byte(s)} }

var (
	deploymentMember = jsonPath{"spec", "workloadTemplate", "deploymentTemplate"}
	tweaksPath       = jsonPath{"spec", "workloadTweaks"}
)

func ownerFuzzKind(kind, abbr, resource string, seeds []jsonObj) *fuzzKind {
	own := make([]jsonObj, 0, len(seeds))
	for _, s := range seeds {
		o, _ := cloneJSON(s).(jsonObj)
		o["apiVersion"], o["kind"] = openyurtv1alpha1.GroupVersion.String(), kind
		spec := ensureObj(o, "spec")
		spec["nodepoolSelector"] = jsonObj{"matchLabels": jsonObj{fuzzTargetLabel: "true"}}
		for _, member := range []string{"deploymentTemplate", "statefulSetTemplate"} {
			if m, ok := ensureObj(spec, "workloadTemplate")[member].(jsonObj); ok {
				ensureObj(m, "spec")["replicas"] = json.Number("1")
			}
		}
		own = append(own, o)
	}
	budget := deploymentMember.child("spec").child("strategy").child("rollingUpdate")
	return &fuzzKind{
		kind: kind, abbr: abbr, resource: resource, groupVersion: openyurtv1alpha1.GroupVersion.String(), namespaced: true,
		controllers: []string{strings.ToLower(kind)},
		seeds:       own,
		mutations: append(containerMutations("/spec/workloadTemplate/", false),
			mutation{"bad-label", mutBadLabel},
			mutIntOrString(deploymentMember, budget.child("maxUnavailable"), budget.child("maxSurge")),
			mutation{"bad-tweak-patch", mutTweakPatch},
			mutation{"bad-tweak-pools", mutTweak("pools", []any{"Bad Pool"}, []any{""}, []any{strings.Repeat("p", 64)}, "x")},
			mutation{"bad-tweak-replicas", mutTweak("replicas", json.Number("-1"), json.Number("2147483648"))},
			mutation{"bad-tweak-image", mutTweak("containerImages", []any{jsonObj{"name": "no-such-container", "targetImage": "nginx"}})},
			mutation{"bad-selector", mutOwnerSelector},
			mutation{"both-templates", mutBothTemplates},
			mutation{"pool-node-selector", mutPoolNodeSelector},
			mutation{"bad-revision-history", mutSet(jsonPath{"spec", "revisionHistoryLimit"}, json.Number("-1"))},
		),
		validEdits: []mutation{
			{"edit-image", mutOwnerImage},
			{"edit-revision-history", func(g *fuzzGen, o jsonObj) (change, bool) {
				v := json.Number(strconv.Itoa(g.intn(6)))
				ensureObj(o, "spec")["revisionHistoryLimit"] = v
				return describe("edit", jsonPath{"spec", "revisionHistoryLimit"}, v, false), true
			}},
		},
		nudge: nudgeOwner,
	}
}

// ownerMember returns the name of the template member o uses, or "".
func ownerMember(o jsonObj) string {
	tmpl, _ := getPath(o, jsonPath{"spec", "workloadTemplate"})
	m, _ := tmpl.(jsonObj)
	for _, member := range []string{"deploymentTemplate", "statefulSetTemplate"} {
		if _, ok := m[member].(jsonObj); ok {
			return member
		}
	}
	return ""
}

// nudgeOwner annotates the template member's metadata: the only kind of change the owner controllers'
// generation filter lets through; the children get the annotation, nothing else changes.
func nudgeOwner(stored jsonObj, round int) jsonObj {
	member := ownerMember(stored)
	if member == "" {
		return nil
	}
	return jsonObj{"spec": jsonObj{"workloadTemplate": jsonObj{member: jsonObj{
		"metadata": jsonObj{"annotations": jsonObj{fuzzNudgeKey: strconv.Itoa(round)}}}}}}
}

// mutTweak appends a tweak whose field is one of values (each invalid), targeting fuzzTargetPool.
func mutTweak(field string, values ...any) func(g *fuzzGen, o jsonObj) (change, bool) {
	return func(g *fuzzGen, o jsonObj) (change, bool) {
		v := pick(g, values)
		tweak := jsonObj{"pools": []any{fuzzTargetPool}, "tweaks": jsonObj{}}
		if field == "pools" {
			tweak["pools"] = v
		} else {
			ensureObj(tweak, "tweaks")[field] = v
		}
		return appendTweak(o, tweak, field, v, true), true
	}
}

// appendTweak appends tweak to spec.workloadTweaks and describes the change by the field set to v: pools of
// the tweak itself, any other field of its tweaks member.
func appendTweak(o jsonObj, tweak jsonObj, field string, v any, invalid bool) change {
	tweaks, _ := getPath(o, tweaksPath)
	l, _ := tweaks.([]any)
	ensureObj(o, "spec")["workloadTweaks"] = append(l, tweak)
	at := tweaksPath.child(len(l))
	if field != "pools" {
		at = at.child("tweaks")
	}
	return describe("tweak", at.child(field), v, invalid)
}

// Tweak patch pointers and operations: valid ones, pointers the webhook protects or cannot resolve, and
// malformed ones.
var (
	tweakPatchPaths = []string{"/spec/replicas", "/spec/template/spec/containers/0/image", "spec/replicas", "/metadata/name",
		"/spec/selector", "/spec/template/spec/containers/9/image", "~", "", "/spec/template/metadata/labels/app", "/spec/template/spec/nodeSelector"}
	tweakPatchOps = []string{"add", "remove", "replace", "move", "", "ADD", "test"}
)

// mutTweakPatch appends a tweak with one random patch; a bad operation or a pointer without its leading
// slash is certainly invalid.
func mutTweakPatch(g *fuzzGen, o jsonObj) (change, bool) {
	path, op := pick(g, tweakPatchPaths), pick(g, tweakPatchOps)
	patch := jsonObj{"path": path, "operation": op}
	if g.chance(0.8) {
		patch["value"] = pick(g, []any{"x", json.Number("2"), jsonObj{}, []any{}, nil, jsonObj{"fuzz": "x"}})
	}
	invalid := !strings.HasPrefix(path, "/") || (op != "add" && op != "remove" && op != "replace")
	tweak := jsonObj{"pools": []any{fuzzTargetPool}, "tweaks": jsonObj{"patches": []any{patch}}}
	c := appendTweak(o, tweak, "patches", patch, invalid)
	return c, true
}

// mutOwnerSelector breaks spec.selector or spec.nodepoolSelector: an unknown operator, an empty selector,
// or a selector on the pool-name label drover sets itself.
func mutOwnerSelector(g *fuzzGen, o jsonObj) (change, bool) {
	field := pick(g, []string{"selector", "nodepoolSelector"})
	var v jsonObj
	switch g.intn(3) {
	case 0:
		v = jsonObj{"matchExpressions": []any{jsonObj{"key": "app", "operator": "Bogus", "values": []any{"x"}}}}
	case 1:
		if field == "nodepoolSelector" { // an empty pool selector is valid: it selects every pool
			field = "selector"
		}
		v = jsonObj{}
	default:
		field = "selector"
		v = jsonObj{"matchLabels": jsonObj{openyurtv1alpha1.LabelPoolName: "x"}}
	}
	ensureObj(o, "spec")[field] = v
	return describe("selector", jsonPath{"spec", field}, v, true), true
}

// mutBothTemplates adds the template member the object does not use, a copy of the one it uses.
func mutBothTemplates(_ *fuzzGen, o jsonObj) (change, bool) {
	member := ownerMember(o)
	if member == "" {
		return change{}, false
	}
	other := map[string]string{"deploymentTemplate": "statefulSetTemplate", "statefulSetTemplate": "deploymentTemplate"}[member]
	tmpl := ensureObj(o, "spec", "workloadTemplate")
	tmpl[other] = cloneJSON(tmpl[member])
	return change{Mutation: "both-templates", Path: "/spec/workloadTemplate", Desc: "/spec/workloadTemplate: " + member + " and " + other, Invalid: true}, true
}

// mutPoolNodeSelector pins the pod template to a pool by node selector, which per-pool rendering owns.
func mutPoolNodeSelector(_ *fuzzGen, o jsonObj) (change, bool) {
	member := ownerMember(o)
	if member == "" {
		return change{}, false
	}
	p := jsonPath{"spec", "workloadTemplate", member, "spec", "template", "spec", "nodeSelector"}
	ensurePath(o, p)[openyurtv1beta1.LabelCurrentNodePool] = fuzzTargetPool
	return describe("node-selector", p, openyurtv1beta1.LabelCurrentNodePool, true), true
}

// mutOwnerImage sets the first container's image to another valid image.
func mutOwnerImage(g *fuzzGen, o jsonObj) (change, bool) {
	member := ownerMember(o)
	p := jsonPath{"spec", "workloadTemplate", member, "spec", "template", "spec", "containers", 0, "image"}
	if _, ok := getPath(o, p); member == "" || !ok {
		return change{}, false
	}
	v := pick(g, []string{"nginx:1.27", "nginx:1.27-alpine", "redis:7.4"})
	setPath(o, p, v)
	return describe("edit", p, v, false), true
}
