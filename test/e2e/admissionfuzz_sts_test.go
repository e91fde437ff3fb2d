package e2e

// The admission fuzz's StatefulSets carrying the PersistentPodState generator's annotations. No drover
// webhook sees them: the API server admits any annotation value, so the mutations make StatefulSets that are
// admitted but whose annotations the generator must refuse (too many keys, keys that are no label keys, a
// target another PersistentPodState tracks). The generator then records a Warning event and does not retry;
// the error-loop check nudges every admitted StatefulSet to prove it. Replicas stay 0 or 1: the pods run on
// the fake nodes.

import (
	"encoding/json"
	"path/filepath"
	"strconv"
	"strings"

	kruisev1alpha1 "github.com/drover-dev/drover/api/kruise/apps/v1alpha1"
	"github.com/drover-dev/drover/internal/localcluster"
)

var (
	stsAnnotations = jsonPath{"metadata", "annotations"}
	annAuto        = kruisev1alpha1.AnnotationAutoGeneratePersistentPodState
	annRequired    = kruisev1alpha1.AnnotationRequiredPersistentTopology
	annPreferred   = kruisev1alpha1.AnnotationPreferredPersistentTopology
	annPersistent  = kruisev1alpha1.AnnotationPersistentPodAnnotations
	annRestore     = kruisev1alpha1.AnnotationRestorePersistentPodAnnotations
)

// stsSeeds reads the sample StatefulSet and derives three more: required topology only with persisted
// annotations, preferred topology only with no replica, and auto-generation off. Each has one replica at
// most and Parallel pod management.
func stsSeeds(root string) ([]jsonObj, error) {
	objs, err := readManifest(filepath.Join(root, "config", "samples", "persistentpodstate-statefulset.yaml"))
	if err != nil {
		return nil, err
	}
	var sample jsonObj
	for _, o := range objs {
		if o["kind"] == "StatefulSet" {
			sample = o
		}
	}
	spec := ensureObj(sample, "spec")
	spec["replicas"], spec["podManagementPolicy"] = json.Number("1"), "Parallel"
	variant := func(replicas string, ann jsonObj) jsonObj {
		o, _ := cloneJSON(sample).(jsonObj)
		ensureObj(o, "spec")["replicas"] = json.Number(replicas)
		ensureObj(o, "metadata")["annotations"] = ann
		return o
	}
	return []jsonObj{
		sample,
		variant("1", jsonObj{annAuto: "true", annRequired: localcluster.LabelHostname,
			annPersistent: "fuzz.drover.dev/ip, fuzz.drover.dev/mac"}),
		variant("0", jsonObj{annAuto: "true", annPreferred: localcluster.LabelZone + "," + localcluster.LabelHostname}),
		variant("1", jsonObj{annAuto: "false", annRequired: localcluster.LabelHostname}),
	}, nil
}

func stsFuzzKind(seeds []jsonObj) *fuzzKind {
	return &fuzzKind{
		kind: "StatefulSet", abbr: "sts", resource: "statefulsets", groupVersion: "apps/v1", namespaced: true,
		controllers: []string{"persistentpodstate-generator"},
		seeds:       seeds,
		prepare:     stsPrepare,
		mutations: []mutation{
			{"too-many-topology-keys", mutSTSTooMany(annRequired, annPreferred)},
			{"too-many-persistent-annotations", mutSTSTooMany(annPersistent)},
			{"garbage-topology", mutSTSAnnotation(annRequired, annPreferred, annPersistent)},
			{"no-topology-keys", mutSTSNoKeys},
			{"auto-generate-value", mutSTSSet(annAuto, "TRUE", "yes", "", "true ", "1")},
			{"claimed-target", mutSTSClaimed},
			{"bad-replicas", mutSet(jsonPath{"spec", "replicas"}, json.Number("-1"), "1", json.Number("1.5"))},
			{"huge-annotation", func(g *fuzzGen, o jsonObj) (change, bool) {
				v := strings.Repeat("fuzz.drover.dev/k,", 15000) // 270,000 bytes: past the 256 KiB of all annotations
				ensurePath(o, stsAnnotations)[annPersistent] = v
				return describe("huge-annotation", stsAnnotations.child(annPersistent), v, true), true
			}},
		},
		validEdits: []mutation{
			{"edit-image", func(g *fuzzGen, o jsonObj) (change, bool) {
				p := jsonPath{"spec", "template", "spec", "containers", 0, "image"}
				v := pick(g, []string{"nginx:1.27", "nginx:1.27-alpine"})
				return describe("edit", p, v, false), setPath(o, p, v)
			}},
			{"edit-replicas", func(g *fuzzGen, o jsonObj) (change, bool) {
				v := json.Number(strconv.Itoa(g.intn(2)))
				ensureObj(o, "spec")["replicas"] = v
				return describe("edit", jsonPath{"spec", "replicas"}, v, false), true
			}},
			{"edit-topology", mutSTSSet(annRequired, localcluster.LabelHostname, localcluster.LabelZone+","+localcluster.LabelHostname, "")},
			{"edit-generate", mutSTSSet(annAuto, "true", "false")},
			{"edit-persistent", mutSTSSet(annPersistent, "fuzz.drover.dev/ip", "", "fuzz.drover.dev/a,fuzz.drover.dev/b")},
		},
		nudge: func(_ jsonObj, round int) jsonObj {
			// A generator annotation, so its event filter lets the change through; any value but "true" keeps
			// restoring off, as in every seed.
			return jsonObj{"metadata": jsonObj{"annotations": jsonObj{annRestore: "fuzz-nudge-" + strconv.Itoa(round)}}}
		},
	}
}

// stsPrepare gives the StatefulSet's selector, pod labels and service name its own name, so that no two
// StatefulSets of the fuzz select each other's pods.
func stsPrepare(o jsonObj) {
	name, _ := getPath(o, jsonPath{"metadata", "name"})
	spec := ensureObj(o, "spec")
	spec["serviceName"] = name
	ensureObj(spec, "selector")["matchLabels"] = jsonObj{"app": name}
	ensureObj(spec, "template", "metadata")["labels"] = jsonObj{"app": name}
}

// mutSTSSet sets the annotation key to one of values (the API server admits them all).
func mutSTSSet(key string, values ...string) func(g *fuzzGen, o jsonObj) (change, bool) {
	return func(g *fuzzGen, o jsonObj) (change, bool) {
		v := pick(g, values)
		ensurePath(o, stsAnnotations)[key] = v
		return describe("annotation", stsAnnotations.child(key), v, false), true
	}
}

// mutSTSTooMany turns auto-generation on and lists one more key than a PersistentPodState holds (or a few
// more) in one of the annotation keys.
func mutSTSTooMany(keys ...string) func(g *fuzzGen, o jsonObj) (change, bool) {
	return func(g *fuzzGen, o jsonObj) (change, bool) {
		key := pick(g, keys)
		n := kruisev1alpha1.MaxTopologyKeys + pick(g, []int{1, 8, 100})
		list := make([]string, n)
		for i, k := range fuzzKeys(n) {
			list[i], _ = k.(string)
		}
		ann := ensurePath(o, stsAnnotations)
		ann[annAuto] = "true"
		if key == annPersistent && ann[annRequired] == nil && ann[annPreferred] == nil {
			ann[annRequired] = localcluster.LabelHostname
		}
		v := strings.Join(list, ",")
		ann[key] = v
		return describe("too-many", stsAnnotations.child(key), v, false), true
	}
}

// Garbage for the comma lists of the generator's annotations: keys that are no label keys, among valid ones
// or alone, blanks and stray commas.
var stsGarbage = []string{"Bad Key", "a/b/c,,", "-x", localcluster.LabelHostname + ",Bad Key", strings.Repeat("k", 318),
	" , ,", ",,,", "fuzz.drover.dev/" + strings.Repeat("k", 64), "UPPER.example/x", "x=y", "kubernetes.io/hostname;zone"}

// mutSTSAnnotation turns auto-generation on and sets one of the annotation keys to garbage.
func mutSTSAnnotation(keys ...string) func(g *fuzzGen, o jsonObj) (change, bool) {
	return func(g *fuzzGen, o jsonObj) (change, bool) {
		key, v := pick(g, keys), pick(g, stsGarbage)
		ann := ensurePath(o, stsAnnotations)
		ann[annAuto], ann[key] = "true", v
		return describe("garbage", stsAnnotations.child(key), v, false), true
	}
}

// mutSTSNoKeys turns auto-generation on with no topology key: the generator reports it and writes nothing.
func mutSTSNoKeys(_ *fuzzGen, o jsonObj) (change, bool) {
	ann := ensurePath(o, stsAnnotations)
	ann[annAuto] = "true"
	delete(ann, annRequired)
	delete(ann, annPreferred)
	return change{Mutation: "no-topology-keys", Path: stsAnnotations.String(), Desc: "auto-generation without a topology key"}, true
}

// mutSTSClaimed names the StatefulSet after the target PersistentPodStates of the fuzz claim, with
// auto-generation on: where one already tracks it, the generated PersistentPodState is refused.
func mutSTSClaimed(_ *fuzzGen, o jsonObj) (change, bool) {
	ensureObj(o, "metadata")["name"] = fuzzClaimedTarget
	stsPrepare(o)
	ann := ensurePath(o, stsAnnotations)
	ann[annAuto] = "true"
	if ann[annRequired] == nil && ann[annPreferred] == nil {
		ann[annRequired] = localcluster.LabelHostname
	}
	return describe("claimed-target", jsonPath{"metadata", "name"}, fuzzClaimedTarget, false), true
}
