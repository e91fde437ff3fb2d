package e2e

// The admission fuzz's PersistentPodState: seeds shaped like the guide's examples, and the mutations of its
// topology terms, persisted annotations, target and retention policy.

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	. "github.com/onsi/gomega"

	kruisev1alpha1 "github.com/drover-dev/drover/api/kruise/apps/v1alpha1"
	"github.com/drover-dev/drover/internal/localcluster"
	"github.com/drover-dev/drover/internal/testutil"
)

// fuzzClaimedTarget is the StatefulSet name that PersistentPodStates and StatefulSets of the fuzz compete
// for: claimTarget has a PersistentPodState of every namespace of the run track it, so that the mutations
// claim-target (a PersistentPodState targets it) and claimed-target (a StatefulSet with the generator's
// annotations takes the name) make a target tracked twice, which the webhook refuses to a second
// PersistentPodState and the generator reports as PersistentPodStateRefused.
const fuzzClaimedTarget = "fz-claimed"

// claimTarget creates the PersistentPodState fz-claimer in each namespace, tracking fuzzClaimedTarget. They go
// with their namespaces.
func claimTarget(namespaces []string) {
	for _, ns := range namespaces {
		pps := testutil.MakePPS("fz-claimer", ns, fuzzClaimedTarget).Obj()
		pps.Generation = 0
		pps.Spec.RequiredPersistentTopology = &kruisev1alpha1.NodeTopologyTerm{NodeTopologyKeys: []string{localcluster.LabelHostname}}
		Expect(k8sClient.Create(suiteCtx, pps)).To(Succeed())
	}
}

var (
	ppsTarget     = jsonPath{"spec", "targetRef"}
	ppsRequired   = jsonPath{"spec", "requiredPersistentTopology", "nodeTopologyKeys"}
	ppsPreferred  = jsonPath{"spec", "preferredPersistentTopology"}
	ppsAnnotation = jsonPath{"spec", "persistentPodAnnotations"}
	ppsRetention  = jsonPath{"spec", "persistentPodStateRetentionPolicy"}
)

// ppsSeeds are valid PersistentPodStates: the guide's example, one of each target kind, preferred terms only,
// and the retention policies. Their target's name is set to their own (ppsPrepare), so that no two unmutated
// seeds claim one target.
func ppsSeeds() []jsonObj {
	hostname, zone := localcluster.LabelHostname, localcluster.LabelZone
	pps := func(apiVersion, kind string, spec jsonObj) jsonObj {
		spec["targetRef"] = jsonObj{"apiVersion": apiVersion, "kind": kind, "name": "x"}
		return toJSONObj(jsonObj{"apiVersion": kruisev1alpha1.GroupVersion.String(), "kind": "PersistentPodState",
			"metadata": jsonObj{}, "spec": spec})
	}
	term := func(weight int, keys ...string) jsonObj {
		return jsonObj{"weight": weight, "preference": jsonObj{"nodeTopologyKeys": keys}}
	}
	return []jsonObj{
		pps("apps/v1", "StatefulSet", jsonObj{
			"requiredPersistentTopology":        jsonObj{"nodeTopologyKeys": []string{hostname}},
			"preferredPersistentTopology":       []any{term(100, zone)},
			"persistentPodAnnotations":          []any{jsonObj{"key": "cni.projectcalico.org/podIP"}},
			"persistentPodStateRetentionPolicy": "WhenScaled",
		}),
		pps("apps/v1", "StatefulSet", jsonObj{
			"preferredPersistentTopology":       []any{term(60, zone), term(40, hostname, zone)},
			"persistentPodStateRetentionPolicy": "WhenDeleted",
		}),
		pps("apps/v1", "StatefulSet", jsonObj{"requiredPersistentTopology": jsonObj{"nodeTopologyKeys": []string{zone, hostname}}}),
		pps("apps.tkestack.io/v1", "TApp", jsonObj{
			"requiredPersistentTopology": jsonObj{"nodeTopologyKeys": []string{hostname}},
			"persistentPodAnnotations":   []any{jsonObj{"key": "fuzz.drover.dev/ip"}, jsonObj{"key": "fuzz.drover.dev/mac"}},
		}),
		pps("apps.kruise.io/v1beta1", "StatefulSet", jsonObj{"preferredPersistentTopology": []any{term(1, zone)}}),
	}
}

func ppsFuzzKind() *fuzzKind {
	return &fuzzKind{
		kind: "PersistentPodState", abbr: "pps", resource: "persistentpodstates",
		groupVersion: kruisev1alpha1.GroupVersion.String(), namespaced: true,
		controllers: []string{"persistentpodstate"},
		seeds:       ppsSeeds(),
		prepare: func(o jsonObj) {
			name, _ := getPath(o, jsonPath{"metadata", "name"})
			ensurePath(o, ppsTarget)["name"] = name
		},
		mutations: []mutation{
			{"too-many-keys", mutPPSTooMany},
			{"empty-key", mutPPSKey(func(*fuzzGen) string { return "" })},
			{"bad-key", mutPPSKey(func(g *fuzzGen) string { return pick(g, badTopologyKeys) })},
			{"duplicate-key", mutPPSDuplicateKey},
			{"no-keys", mutSet(ppsRequired, []any{}, nil)},
			{"no-topology", mutPPSNoTopology},
			{"bad-weight", mutPPSWeight},
			{"bad-target-api-version", mutSet(ppsTarget.child("apiVersion"), "apps/v1/x", "", "v1", "/v1", "batch/v1", "Apps/v1")},
			{"bad-target-kind", mutSet(ppsTarget.child("kind"), "Deployment", "statefulset", "Pod", "", "DaemonSet")},
			{"bad-target-name", mutSet(ppsTarget.child("name"), strings.Repeat("n", 254), "")},
			{"claim-target", mutPPSClaim},
			{"bad-retention", mutSet(ppsRetention, "Never", "whenScaled", "WHENDELETED", json.Number("1"))},
		},
		validEdits: []mutation{
			{"edit-retention", func(g *fuzzGen, o jsonObj) (change, bool) {
				v := pick(g, []string{"", "WhenScaled", "WhenDeleted"})
				ensureObj(o, "spec")["persistentPodStateRetentionPolicy"] = v
				return describe("edit", ppsRetention, v, false), true
			}},
			{"edit-annotations", func(g *fuzzGen, o jsonObj) (change, bool) {
				v := []any{jsonObj{"key": "fuzz.drover.dev/" + g.randString(6)}}
				ensureObj(o, "spec")["persistentPodAnnotations"] = v
				return describe("edit", ppsAnnotation, v, false), true
			}},
			{"edit-required", func(g *fuzzGen, o jsonObj) (change, bool) {
				v := pick(g, [][]any{{localcluster.LabelHostname}, {localcluster.LabelZone}, {localcluster.LabelZone, localcluster.LabelHostname}})
				ensureObj(o, "spec", "requiredPersistentTopology")["nodeTopologyKeys"] = v
				return describe("edit", ppsRequired, v, false), true
			}},
		},
		nudge: nudgePPS,
	}
}

// badTopologyKeys are node label keys no term may hold: blanks, bad prefixes and names, and keys too long for a
// label key (a name over 63 characters, a key over 317).
var badTopologyKeys = []string{"Bad Key", "a/b/c", "-x", "x-", "/x", "fuzz.drover.dev/", "fuzz.drover.dev/" + strings.Repeat("k", 64),
	strings.Repeat("k", 318), "UPPER_.example/x", " kubernetes.io/hostname"}

// fuzzKeys returns n distinct valid label keys.
func fuzzKeys(n int) []any {
	out := make([]any, n)
	for i := range out {
		out[i] = fmt.Sprintf("fuzz.drover.dev/key-%d", i)
	}
	return out
}

// mutPPSTooMany puts one more than the CRD's bound (or a few more) into a required term, the preferred terms,
// or the persisted annotations.
func mutPPSTooMany(g *fuzzGen, o jsonObj) (change, bool) {
	extra := pick(g, []int{1, 8})
	switch g.intn(3) {
	case 0:
		v := fuzzKeys(kruisev1alpha1.MaxTopologyKeys + extra)
		ensurePath(o, ppsRequired[:2])["nodeTopologyKeys"] = v
		return describe("too-many-keys", ppsRequired, v, true), true
	case 1:
		terms := make([]any, kruisev1alpha1.MaxPreferredTerms+extra)
		for i := range terms {
			terms[i] = jsonObj{"weight": json.Number(strconv.Itoa(i + 1)), "preference": jsonObj{"nodeTopologyKeys": fuzzKeys(1)}}
		}
		ensureObj(o, "spec")["preferredPersistentTopology"] = terms
		return describe("too-many-terms", ppsPreferred, terms, true), true
	default:
		keys := fuzzKeys(kruisev1alpha1.MaxPersistentPodAnnotations + extra)
		v := make([]any, len(keys))
		for i, k := range keys {
			v[i] = jsonObj{"key": k}
		}
		ensureObj(o, "spec")["persistentPodAnnotations"] = v
		return describe("too-many-annotations", ppsAnnotation, v, true), true
	}
}

// ppsKeyLists returns the paths of o's key lists: the required term's keys, each preferred term's keys and the
// persisted annotations (whose items are objects with a key).
func ppsKeyLists(o jsonObj) []jsonPath {
	var out []jsonPath
	if l, ok := getPath(o, ppsRequired); ok && nonEmptyList(nil, l) {
		out = append(out, ppsRequired)
	}
	terms, _ := getPath(o, ppsPreferred)
	l, _ := terms.([]any)
	for i := range l {
		p := ppsPreferred.child(i).child("preference").child("nodeTopologyKeys")
		if keys, ok := getPath(o, p); ok && nonEmptyList(nil, keys) {
			out = append(out, p)
		}
	}
	if a, ok := getPath(o, ppsAnnotation); ok && nonEmptyList(nil, a) {
		out = append(out, ppsAnnotation)
	}
	return out
}

// keyPath returns the path of the key of item i of the key list at p.
func keyPath(p jsonPath, i int) jsonPath {
	if p.last() == "persistentPodAnnotations" {
		return p.child(i).child("key")
	}
	return p.child(i)
}

// mutPPSKey sets a random key of a random key list to what bad returns: every value it returns is invalid
// there (an annotation key is checked like a label key, in lower case, so upper case alone is no error, but
// every bad key has another fault).
func mutPPSKey(bad func(*fuzzGen) string) func(g *fuzzGen, o jsonObj) (change, bool) {
	return func(g *fuzzGen, o jsonObj) (change, bool) {
		lists := ppsKeyLists(o)
		if len(lists) == 0 {
			return change{}, false
		}
		lp := pick(g, lists)
		l, _ := getPath(o, lp)
		p := keyPath(lp, g.intn(len(l.([]any))))
		v := bad(g)
		setPath(o, p, v)
		return describe("key", p, v, true), true
	}
}

// mutPPSDuplicateKey repeats a key of a key list.
func mutPPSDuplicateKey(g *fuzzGen, o jsonObj) (change, bool) {
	lists := ppsKeyLists(o)
	if len(lists) == 0 {
		return change{}, false
	}
	lp := pick(g, lists)
	l, _ := getPath(o, lp)
	items := l.([]any)
	setPath(o, lp, append(items, cloneJSON(items[g.intn(len(items))])))
	return change{Mutation: "duplicate-key", Path: lp.String(), Desc: lp.String() + ": a key twice", Invalid: true}, true
}

func mutPPSNoTopology(_ *fuzzGen, o jsonObj) (change, bool) {
	spec := ensureObj(o, "spec")
	delete(spec, "requiredPersistentTopology")
	delete(spec, "preferredPersistentTopology")
	return change{Mutation: "no-topology", Path: "/spec", Desc: "/spec: no topology term", Invalid: true}, true
}

// mutPPSWeight sets the weight of a preferred term (adding one when there is none) outside 1–100.
func mutPPSWeight(g *fuzzGen, o jsonObj) (change, bool) {
	terms, _ := getPath(o, ppsPreferred)
	l, _ := terms.([]any)
	if len(l) == 0 {
		l = []any{jsonObj{"weight": json.Number("1"), "preference": jsonObj{"nodeTopologyKeys": []any{localcluster.LabelZone}}}}
		ensureObj(o, "spec")["preferredPersistentTopology"] = l
	}
	p := ppsPreferred.child(g.intn(len(l))).child("weight")
	v := pick(g, []json.Number{"0", "101", "-1", "1000", "2147483648"})
	return describe("weight", p, v, setPath(o, p, v)), true
}

// mutPPSClaim points the target at the StatefulSet that the fuzz's objects compete for: the first object of a
// namespace to claim it may pass, the others are refused.
func mutPPSClaim(_ *fuzzGen, o jsonObj) (change, bool) {
	v := jsonObj{"apiVersion": "apps/v1", "kind": "StatefulSet", "name": fuzzClaimedTarget}
	ensureObj(o, "spec")["targetRef"] = v
	return describe("claim-target", ppsTarget, v, false), true
}

// nudgePPS changes the spec, the only change the PersistentPodState controller's event filter lets through
// (generation changes), without changing what it does: the retention policy "" and WhenScaled mean the same.
// Under WhenDeleted the nudge adds, then removes, a persisted annotation key no pod carries.
func nudgePPS(stored jsonObj, round int) jsonObj {
	policy, _ := getPath(stored, ppsRetention)
	switch policy {
	case nil, "":
		return jsonObj{"spec": jsonObj{"persistentPodStateRetentionPolicy": "WhenScaled"}}
	case "WhenScaled":
		return jsonObj{"spec": jsonObj{"persistentPodStateRetentionPolicy": ""}}
	}
	l, _ := getPath(stored, ppsAnnotation)
	items, _ := l.([]any)
	key := fuzzNudgeKey + "-" + strconv.Itoa(round)
	var out []any
	for _, it := range items {
		if m, ok := it.(jsonObj); !ok || !strings.HasPrefix(fmt.Sprint(m["key"]), fuzzNudgeKey) {
			out = append(out, it)
		}
	}
	if len(out) >= kruisev1alpha1.MaxPersistentPodAnnotations {
		return nil
	}
	return jsonObj{"spec": jsonObj{"persistentPodAnnotations": append(out, jsonObj{"key": key})}}
}
