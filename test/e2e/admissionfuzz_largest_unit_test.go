package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/validation/field"

	kruisev1alpha1 "github.com/drover-dev/drover/api/kruise/apps/v1alpha1"
	communityv1alpha1 "github.com/drover-dev/drover/api/kubestellar/community/v1alpha1"
	tkestackv1 "github.com/drover-dev/drover/api/tkestack/apps/v1"
	"github.com/drover-dev/drover/internal/measure"
	"github.com/drover-dev/drover/internal/nodepool"
	"github.com/drover-dev/drover/internal/stagedbindingpolicy/sbpcel"
	"github.com/drover-dev/drover/internal/stagedbindingpolicy/stager"
	"github.com/drover-dev/drover/internal/tapp"
	"github.com/drover-dev/drover/internal/yurtappdaemon"
)

// The largest objects of the burst, without a cluster: `go test ./test/e2e -run 'TestAdmissionFuzz(Largest|CEL)'`.

func expectNoErrors(t *testing.T, kind string, errs field.ErrorList) {
	t.Helper()
	if len(errs) > 0 {
		t.Errorf("the largest %s breaks drover's rules: %v", kind, errs.ToAggregate())
	}
}

// Every largest object keeps drover's rules, is at the bounds it claims, and fits the size etcd stores. With
// DROVER_FUZZ_LARGEST_DIR set, the objects of round 0 (namespace fz-ns) and the costliest StagedBindingPolicy
// are written there, one JSON file each, to send by hand: kubectl create --dry-run=server -f <dir>/tapp.json.
func TestAdmissionFuzzLargest(t *testing.T) {
	objs := largestObjects("fz-ns", 0)
	if len(objs) != 6 {
		t.Fatalf("%d kinds, want 6", len(objs))
	}
	dir := os.Getenv("DROVER_FUZZ_LARGEST_DIR")
	if dir != "" {
		objs["StagedBindingPolicy-costliest"] = largestSBP("fz-burst-sbp-1-", 1, true)
	}
	for kind, o := range objs {
		data, err := json.Marshal(o)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: %d bytes", kind, len(data))
		if len(data) > maxLargestBytes {
			t.Errorf("the largest %s is %d bytes, more than %d", kind, len(data), maxLargestBytes)
		}
		if dir != "" {
			if err := os.WriteFile(filepath.Join(dir, strings.ToLower(kind)+".json"), data, 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}

	pool := largestNodePool("fz-burst-np-0")
	expectNoErrors(t, "NodePool", nodepool.ValidateNodePool(pool, nil))
	if len(pool.Spec.Labels) != maxPoolLabels || len(pool.Spec.Annotations) != maxPoolAnnotations || len(pool.Spec.Taints) != maxPoolTaints {
		t.Errorf("NodePool: %d labels, %d annotations, %d taints", len(pool.Spec.Labels), len(pool.Spec.Annotations), len(pool.Spec.Taints))
	}

	for _, kind := range []string{"YurtAppDaemon", "UnitedDaemonSet"} {
		owner := largestOwner(kind, "fz-burst-0", "fz-ns")
		expectNoErrors(t, kind, yurtappdaemon.ValidateOwner(owner, nil))
		tweaks := owner.DaemonSpec().WorkloadTweaks
		if len(tweaks) != maxTweaks || len(tweaks[0].Pools) != maxTweakPools ||
			len(tweaks[0].Tweaks.ContainerImages) != maxTweakImages || len(tweaks[0].Tweaks.Patches) != maxTweakPatches {
			t.Errorf("%s is not at its bounds", kind)
		}
	}

	app := largestTApp("fz-burst-tapp-0", "fz-ns")
	expectNoErrors(t, "TApp", append(tapp.CountBounds(app), tapp.ValidateTApp(app, nil)...))
	if len(app.Spec.TemplatePool) != tkestackv1.MaxTemplatePool || len(app.Spec.VolumeClaimTemplates) != tkestackv1.MaxVolumeClaimTemplates {
		t.Errorf("TApp: %d pool templates, %d claims", len(app.Spec.TemplatePool), len(app.Spec.VolumeClaimTemplates))
	}

	pps := largestPPS("fz-burst-pps-0", "fz-ns", "fz-burst-target-0-")
	expectNoErrors(t, "PersistentPodState", kruisev1alpha1.ValidatePersistentPodState(pps, nil, nil, nil))
	if len(pps.Spec.PreferredPersistentTopology) != kruisev1alpha1.MaxPreferredTerms ||
		len(pps.Spec.PersistentPodAnnotations) != kruisev1alpha1.MaxPersistentPodAnnotations ||
		len(pps.Spec.TargetRef.Name) != 253 || len(pps.Spec.PersistentPodAnnotations[0].Key) != kruisev1alpha1.MaxKeyLength {
		t.Error("PersistentPodState is not at its bounds")
	}
}

// Both shapes of the largest StagedBindingPolicy keep drover's rules (every expression compiles), are at
// their bounds, and have expressions distinct from each other's and from another round's.
func TestAdmissionFuzzLargestSBP(t *testing.T) {
	for _, costliest := range []bool{false, true} {
		sbp := largestSBP("fz-burst-sbp-0-", 0, costliest)
		began := time.Now()
		expectNoErrors(t, "StagedBindingPolicy", stager.Validate(sbp, sbpcel.NewCache(sbpcel.Options{})))
		total, exprs := 0, map[string]bool{}
		for _, st := range sbp.Spec.Stages {
			for _, e := range []string{st.Filter, st.Condition, st.FailureCondition} {
				if e == "" {
					continue
				}
				if exprs[e] {
					t.Errorf("costliest=%v: an expression twice", costliest)
				}
				exprs[e], total = true, total+len(e)
			}
		}
		t.Logf("costliest=%v: %d expressions, %d characters, validated in %s", costliest, len(exprs), total, time.Since(began))
		want := communityv1alpha1.MaxStages * len(celFields)
		if costliest {
			want = communityv1alpha1.MaxTotalExpressionLength / len(costliestCEL(0))
		}
		if len(sbp.Name) != communityv1alpha1.MaxNameLength || len(sbp.Spec.Stages) != communityv1alpha1.MaxStages || len(exprs) != want ||
			total > communityv1alpha1.MaxTotalExpressionLength || !costliest && total != communityv1alpha1.MaxTotalExpressionLength {
			t.Errorf("costliest=%v: %d characters of name, %d stages, %d expressions (want %d) of %d characters",
				costliest, len(sbp.Name), len(sbp.Spec.Stages), len(exprs), want, total)
		}
		other := largestSBP("fz-burst-sbp-1-", 1, costliest)
		if exprs[other.Spec.Stages[0].Condition] {
			t.Errorf("costliest=%v: two rounds share an expression", costliest)
		}
	}
}

// Every expression of the tables compiles or is refused as the table says, in its field's environment; the
// nested and costliest expressions are at the node bound: one level or term more is refused.
func TestAdmissionFuzzCEL(t *testing.T) {
	cache := sbpcel.NewCache(sbpcel.Options{})
	compiles := func(field, expr string) error {
		_, err := cache.Compile(sbpcel.Kind(field), expr)
		return err
	}
	refusedForNodes := func(err error) bool { return err != nil && strings.Contains(err.Error(), "syntax nodes") }
	for _, field := range celFields {
		for _, e := range append(append([]string(nil), validCEL[field]...), dynCEL[field]...) {
			if err := compiles(field, e); err != nil {
				t.Errorf("%s %q is refused: %v", field, e, err)
			}
		}
		for _, e := range invalidCEL[field] {
			if compiles(field, e) == nil {
				t.Errorf("%s %q is admitted", field, e)
			}
		}
		if compiles(field, overlongCEL(communityv1alpha1.MaxExpressionLength)) != nil ||
			compiles(field, overlongCEL(communityv1alpha1.MaxExpressionLength+1)) == nil {
			t.Errorf("%s: the length bound is not where overlongCEL puts it", field)
		}
		depth := maxNestDepth(field)
		open, leaf, closing := nestedCEL(field, depth, "t")
		if err := compiles(field, open+leaf+closing); err != nil {
			t.Errorf("%s nested %d deep: %v", field, depth, err)
		}
		open, leaf, closing = nestedCEL(field, depth+1, "t")
		if err := compiles(field, open+leaf+closing); !refusedForNodes(err) {
			t.Errorf("%s nested %d deep: %v, want a refusal for its nodes", field, depth+1, err)
		}
		if e := fitCEL(field, "t", 342); len(e) != 342 || compiles(field, e) != nil {
			t.Errorf("%s: fitCEL gives %d characters: %q", field, len(e), e)
		}
	}
	if err := compiles(celCondition, costliestCEL(7)); err != nil {
		t.Errorf("the costliest expression is refused: %v", err)
	}
	if err := compiles(celCondition, costliestCEL(7)+" || size([7]) > 0"); !refusedForNodes(err) {
		t.Errorf("the costliest expression and one term more: %v, want a refusal for its nodes", err)
	}
}

func TestNudgePPS(t *testing.T) {
	withPolicy := func(p string, keys ...string) jsonObj {
		var l []any
		for _, k := range keys {
			l = append(l, jsonObj{"key": k})
		}
		return jsonObj{"spec": jsonObj{"persistentPodStateRetentionPolicy": p, "persistentPodAnnotations": l}}
	}
	if got := nudgePPS(withPolicy(""), 1); got["spec"].(jsonObj)["persistentPodStateRetentionPolicy"] != "WhenScaled" {
		t.Errorf("empty policy: %v", got)
	}
	if got := nudgePPS(withPolicy("WhenScaled"), 1); got["spec"].(jsonObj)["persistentPodStateRetentionPolicy"] != "" {
		t.Errorf("WhenScaled: %v", got)
	}
	got := nudgePPS(withPolicy("WhenDeleted", "a.io/x", fuzzNudgeKey+"-1"), 2)
	if l := got["spec"].(jsonObj)["persistentPodAnnotations"].([]any); len(l) != 2 || l[1].(jsonObj)["key"] != fuzzNudgeKey+"-2" {
		t.Errorf("WhenDeleted: %v", got)
	}
	full := make([]string, 32)
	for i, k := range fuzzKeys(32) {
		full[i], _ = k.(string)
	}
	if got := nudgePPS(withPolicy("WhenDeleted", full...), 1); got != nil {
		t.Errorf("WhenDeleted at the bound: %v, want no nudge", got)
	}
}

func TestGeneratorObject(t *testing.T) {
	e := reconcileErrorLine{Controller: "persistentpodstate-generator",
		Error: `creating PersistentPodState fuzz-x1/fz-sts-12: Post "https://127.0.0.1/apis": EOF`}
	generatorObject(&e)
	if e.Kind != "StatefulSet" || e.Namespace != "fuzz-x1" || e.Name != "fz-sts-12" {
		t.Errorf("got %+v", e)
	}
}

// The burst attributes the manager's webhook time to kinds by the webhooks' paths.
func TestWebhookSeconds(t *testing.T) {
	samples := []measure.Sample{
		{Name: "controller_runtime_webhook_latency_seconds_sum", Labels: map[string]string{"webhook": "/mutate-apps-openyurt-io-v1alpha1-yurtappdaemon"}, Value: 0.5},
		{Name: "controller_runtime_webhook_latency_seconds_sum", Labels: map[string]string{"webhook": "/validate-apps-openyurt-io-v1alpha1-yurtappdaemon"}, Value: 1},
		{Name: "controller_runtime_webhook_latency_seconds_sum", Labels: map[string]string{"webhook": "/validate-community-kubestellar-io-v1alpha1-stagedbindingpolicy"}, Value: 2},
	}
	got := webhookSeconds(samples, loadFuzzKinds(t))
	if got["YurtAppDaemon"] != 1.5 || got["StagedBindingPolicy"] != 2 || got["UnitedDaemonSet"] != 0 {
		t.Errorf("got %v", got)
	}
}

// The seeds and valid edits of PersistentPodState and StagedBindingPolicy keep drover's rules, and a mutation
// that claims to make its object invalid does (or the object no longer decodes, or breaks a bound only the
// CRD schema sets): the fuzz fails the run when such an object is admitted or a seed refused, so a wrong
// claim would be a false finding.
func TestAdmissionFuzzInvalidClaims(t *testing.T) {
	cache := sbpcel.NewCache(sbpcel.Options{})
	refused := map[string]func(data []byte) bool{
		"PersistentPodState": func(data []byte) bool {
			var pps kruisev1alpha1.PersistentPodState
			if json.Unmarshal(data, &pps) != nil || len(pps.Spec.TargetRef.Name) > 253 {
				return true
			}
			return len(kruisev1alpha1.ValidatePersistentPodState(&pps, nil, nil, nil)) > 0
		},
		"StagedBindingPolicy": func(data []byte) bool {
			var sbp communityv1alpha1.StagedBindingPolicy
			if json.Unmarshal(data, &sbp) != nil {
				return true
			}
			return len(stager.Validate(&sbp, cache)) > 0
		},
	}
	g := newFuzzGen(3)
	for _, k := range loadFuzzKinds(t) {
		isRefused := refused[k.kind]
		if isRefused == nil {
			continue
		}
		for i, seed := range k.seeds {
			for _, m := range append([]mutation{{"unmutated", func(*fuzzGen, jsonObj) (change, bool) { return change{}, true }}}, k.validEdits...) {
				o, _ := cloneJSON(seed).(jsonObj)
				ensureObj(o, "metadata")["name"] = "fz-x-1"
				if k.prepare != nil {
					k.prepare(o)
				}
				if c, ok := m.apply(g, o); ok && isRefused(encodeBody(o)) {
					t.Errorf("%s seed %d, %s %s: drover's rules refuse it", k.kind, i, m.name, c.Desc)
				}
			}
		}
		for _, m := range k.mutations {
			for i := range 40 {
				o, _ := cloneJSON(k.seeds[i%len(k.seeds)]).(jsonObj)
				ensureObj(o, "metadata")["name"] = "fz-x-1"
				if k.prepare != nil {
					k.prepare(o)
				}
				c, ok := m.apply(g, o)
				if ok && c.Invalid && !isRefused(encodeBody(o)) {
					t.Errorf("%s %s claims an invalid object, and drover's rules admit it: %s", k.kind, m.name, c.Desc)
					break
				}
			}
		}
	}
}
