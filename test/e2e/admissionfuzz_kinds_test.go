package e2e

// The admission fuzz's generator, part 3: the served kinds, their valid seed objects and the mutations that
// know their fields. NodePool and the two YurtAppDaemon kinds are here; TApp, PersistentPodState, the
// StatefulSets of the PersistentPodState generator and StagedBindingPolicy have files of their own
// (admissionfuzz_tapp_test.go, admissionfuzz_pps_test.go, admissionfuzz_sts_test.go, admissionfuzz_sbp_test.go).

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	openyurtv1alpha1 "github.com/drover-dev/drover/api/openyurt/apps/v1alpha1"
	openyurtv1beta1 "github.com/drover-dev/drover/api/openyurt/apps/v1beta1"
	"github.com/drover-dev/drover/internal/testutil"
)

// fuzzKind is one served kind as the fuzz sees it.
type fuzzKind struct {
	kind, abbr, resource, groupVersion string
	namespaced                         bool
	// controllers are the controllers (their metrics label) that reconcile an object of the kind when it is
	// nudged.
	controllers []string
	// prepare, when set, adjusts a copy of a seed once the run has named it (and set its namespace), before
	// any mutation: what must follow the name (a PersistentPodState's target, a StatefulSet's labels).
	prepare func(o jsonObj)
	// seeds are valid objects: without a mutation, every one is admitted.
	seeds []jsonObj
	// mutations know the kind's fields; the generic ones come on top.
	mutations []mutation
	// validEdits change an admitted object and keep it valid.
	validEdits []mutation
	// nudge returns a merge patch for the stored object that makes its controller reconcile it (a change
	// its controller's event filter lets through) without changing what the controller does.
	nudge func(stored jsonObj, round int) jsonObj
}

// path is the REST path of the kind's collection (name "") or of one object.
func (k *fuzzKind) path(ns, name string) string {
	p := "/apis/" + k.groupVersion
	if k.namespaced {
		p += "/namespaces/" + ns
	}
	p += "/" + k.resource
	if name != "" {
		p += "/" + name
	}
	return p
}

const (
	// fuzzTargetLabel selects fuzzTargetPool, the one pool the seed YurtAppDaemons select, so that each
	// admitted owner renders one child (the pool has no nodes: the children's pods stay pending).
	fuzzTargetLabel = "fuzz.drover.dev/target"
	fuzzTargetPool  = "fz-target"
	// fuzzNudgeKey is the annotation key the nudges write.
	fuzzNudgeKey = "fuzz.drover.dev/nudge"
)

// fuzzKinds returns the kinds the fuzz sends, with their seeds read from the repository at root: drover's six
// served kinds and the StatefulSets that carry the PersistentPodState generator's annotations.
func fuzzKinds(root string) ([]*fuzzKind, error) {
	samples := filepath.Join(root, "config", "samples")
	deploy, err := readManifest(filepath.Join(samples, "yurtappdaemon.yaml"))
	if err != nil {
		return nil, err
	}
	sts, err := readManifest(filepath.Join(samples, "uniteddaemonset.yaml"))
	if err != nil {
		return nil, err
	}
	ownerSeeds := append(append(deploy, sts...), seedOf(tweakedOwnerSeed()))
	tapps, err := tappSeeds(root)
	if err != nil {
		return nil, err
	}
	statefulSets, err := stsSeeds(root)
	if err != nil {
		return nil, err
	}
	sbps, err := sbpSeeds(root)
	if err != nil {
		return nil, err
	}
	return []*fuzzKind{
		nodePoolFuzzKind(),
		ownerFuzzKind("YurtAppDaemon", "yad", "yurtappdaemons", ownerSeeds),
		ownerFuzzKind("UnitedDaemonSet", "udd", "uniteddaemonsets", ownerSeeds),
		tappFuzzKind(tapps),
		ppsFuzzKind(),
		stsFuzzKind(statefulSets),
		sbpFuzzKind(sbps),
	}, nil
}

// readManifest returns the objects of a YAML file, as seeds: status, namespace and creation time dropped.
func readManifest(file string) ([]jsonObj, error) {
	data, err := os.ReadFile(filepath.Clean(file))
	if err != nil {
		return nil, err
	}
	reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var out []jsonObj
	for {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		raw, err := yaml.YAMLToJSON(doc)
		if err != nil {
			return nil, err
		}
		o, err := decodeJSON(raw)
		if err != nil {
			return nil, err
		}
		if len(o) > 0 {
			out = append(out, seedOf(o))
		}
	}
}

// seedOf converts an object to a seed: status, namespace, name and creation time dropped.
func seedOf(v any) jsonObj {
	o := toJSONObj(v)
	delete(o, "status")
	meta := ensureObj(o, "metadata")
	for _, k := range []string{"creationTimestamp", "namespace", "name"} {
		delete(meta, k)
	}
	return o
}

func nodePoolFuzzKind() *fuzzKind {
	added := metav1.NewTime(time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC))
	full := testutil.MakeNodePool("x").Type(openyurtv1beta1.Edge).HostNetwork(true).
		Labels(map[string]string{"fuzz.drover.dev/zone": "z1"}).
		Annotations(map[string]string{"fuzz.drover.dev/note": "seed"}).
		Taints(corev1.Taint{Key: "fuzz.drover.dev/dedicated", Value: "db", Effect: corev1.TaintEffectNoSchedule},
			corev1.Taint{Key: "fuzz.drover.dev/evict", Effect: corev1.TaintEffectNoExecute, TimeAdded: &added})
	return &fuzzKind{
		kind: "NodePool", abbr: "np", resource: "nodepools", groupVersion: openyurtv1beta1.GroupVersion.String(),
		controllers: []string{"nodepool"},
		seeds: []jsonObj{
			seedOf(testutil.MakeNodePool("x").Obj()),
			seedOf(testutil.MakeNodePool("x").Type(openyurtv1beta1.Cloud).Labels(map[string]string{"fuzz.drover.dev/zone": "z2"}).Obj()),
			seedOf(full.Obj()),
		},
		mutations: []mutation{
			{"bad-taint-time", mutTaint(func(g *fuzzGen) (string, any) {
				return "timeAdded", pick(g, []any{"yesterday", "2024-13-45T00:00:00Z", json.Number("12345"), "now", "2024-01-02"})
			})},
			{"bad-taint", mutTaint(func(g *fuzzGen) (string, any) {
				field := pick(g, []string{"key", "effect", "value"})
				return field, pick(g, badTaintFields[field])
			})},
			{"bad-pool-type", mutSet(jsonPath{"spec", "type"}, "Fog", "edge", "CLOUD")},
			{"cloud-host-network", mutCloudHostNetwork},
			{"bad-pool-name", mutSet(jsonPath{"metadata", "name"}, strings.Repeat("n", 64), "fz-"+strings.Repeat("n", 61))},
			{"reserved-label", mutSet(jsonPath{"spec", "labels", openyurtv1beta1.LabelCurrentNodePool}, "other")},
			{"bad-label", mutBadLabel},
		},
		validEdits: []mutation{
			{"edit-labels", mutEditString(jsonPath{"spec", "labels", "fuzz.drover.dev/edit"})},
			{"edit-annotations", mutEditString(jsonPath{"spec", "annotations", "fuzz.drover.dev/edit"})},
		},
		nudge: func(_ jsonObj, round int) jsonObj {
			return jsonObj{"spec": jsonObj{"annotations": jsonObj{fuzzNudgeKey: strconv.Itoa(round)}}}
		},
	}
}

// badTaintFields are invalid values of a taint's fields.
var badTaintFields = map[string][]any{
	"key":    {"bad key", strings.Repeat("k", 64), "-x", ""},
	"effect": {"Bogus", "noschedule"},
	"value":  {"bad value", strings.Repeat("v", 64), "x_"},
}

// mutTaint sets one field of a random taint (adding a NoExecute taint when there is none) to what bad
// returns: every value it returns is invalid.
func mutTaint(bad func(g *fuzzGen) (string, any)) func(g *fuzzGen, o jsonObj) (change, bool) {
	return func(g *fuzzGen, o jsonObj) (change, bool) {
		spec := ensureObj(o, "spec")
		taints, _ := spec["taints"].([]any)
		if len(taints) == 0 {
			taints = []any{jsonObj{"key": "fuzz.drover.dev/t", "effect": "NoExecute"}}
			spec["taints"] = taints
		}
		i := g.intn(len(taints))
		t, ok := taints[i].(jsonObj)
		if !ok {
			return change{}, false
		}
		field, v := bad(g)
		t[field] = v
		return describe("taint", jsonPath{"spec", "taints", i, field}, v, true), true
	}
}

// mutSet sets the node at p (creating the objects on the way) to one of values, each of them invalid there.
func mutSet(p jsonPath, values ...any) func(g *fuzzGen, o jsonObj) (change, bool) {
	return func(g *fuzzGen, o jsonObj) (change, bool) {
		ensurePath(o, p[:len(p)-1])
		v := pick(g, values)
		setPath(o, p, v)
		return describe("set", p, v, true), true
	}
}

// mutEditString sets the string at p (creating the objects on the way) to a fresh valid value.
func mutEditString(p jsonPath) func(g *fuzzGen, o jsonObj) (change, bool) {
	return func(g *fuzzGen, o jsonObj) (change, bool) {
		ensurePath(o, p[:len(p)-1])
		v := g.randString(8)
		setPath(o, p, v)
		return describe("edit", p, v, false), true
	}
}

func mutCloudHostNetwork(_ *fuzzGen, o jsonObj) (change, bool) {
	spec := ensureObj(o, "spec")
	spec["type"], spec["hostNetwork"] = "Cloud", true
	return change{Mutation: "cloud-host-network", Path: "/spec", Desc: "/spec: type Cloud with hostNetwork", Invalid: true}, true
}

// tweakedOwnerSeed is a YurtAppDaemon with each kind of tweak, valid for fuzzTargetPool.
func tweakedOwnerSeed() *openyurtv1alpha1.YurtAppDaemon {
	lbls := map[string]string{"app": "fuzz-tweaked"}
	spec := testutil.DeploymentSpec(lbls, "nginx:1.27")
	spec.Replicas = ptr.To[int32](1)
	return testutil.MakeYurtAppDaemon("x", "").Deployment(spec).TemplateMetadata(lbls, nil).
		NodePoolSelectorLabels(map[string]string{fuzzTargetLabel: "true"}).
		Tweaks(openyurtv1alpha1.WorkloadTweak{
			Pools: []string{fuzzTargetPool},
			Tweaks: openyurtv1alpha1.Tweaks{
				Replicas:        ptr.To[int32](0),
				ContainerImages: []openyurtv1alpha1.ContainerImage{{Name: "main", TargetImage: "nginx:1.27-alpine"}},
				Patches: []openyurtv1alpha1.Patch{{Path: "/spec/template/spec/containers/0/env",
					Operation: openyurtv1alpha1.PatchAdd, Value: rawJSON(`[{"name":"POOL","value":"{{nodepool-name}}"}]`)}},
			},
		}).Obj()
}
