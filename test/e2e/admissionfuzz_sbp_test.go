package e2e

// The admission fuzz's StagedBindingPolicy: the stager's example and seeds over a small KubeStellar fixture
// (two ManagedClusters, a StatusCollector and a Deployment, made by setupSBPFixture) so that admitted
// policies really roll out and evaluate their expressions; the mutations of stages, expressions, durations
// and the downsync clauses.

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"

	communityv1alpha1 "github.com/drover-dev/drover/api/kubestellar/community/v1alpha1"
	controlv1alpha1 "github.com/drover-dev/drover/api/kubestellar/control/v1alpha1"
)

// The fixture the seeds select: clusters labelled fuzzSBPTier=dev|prod, the collector fuzzSBPCollector and
// the Deployment labelled app.kubernetes.io/name=fuzzSBPApp.
const (
	fuzzSBPTier      = "fuzz.drover.dev/sbp-tier"
	fuzzSBPCollector = "fz-sbp"
	fuzzSBPApp       = "fz-sbp-web"
)

var sbpStages = jsonPath{"spec", "stages"}

// setupSBPFixture creates what the seeds place and gate, as KubeStellar and OCM would provide it: the
// ManagedClusters fz-sbp-dev and fz-sbp-prod, the StatusCollector fz-sbp (count, available) and a
// one-replica Deployment in ns. kssim makes every cluster report it available. Everything goes at the end of
// the spec.
func setupSBPFixture(ns string) {
	for _, tier := range []string{"dev", "prod"} {
		mc := &unstructured.Unstructured{}
		mc.SetGroupVersionKind(managedClusterGVK)
		mc.SetName("fz-sbp-" + tier)
		mc.SetLabels(map[string]string{fuzzSBPTier: tier})
		createWithCleanup(mc)
	}
	available := controlv1alpha1.Expression("returned.status.availableReplicas")
	createWithCleanup(&controlv1alpha1.StatusCollector{
		ObjectMeta: metav1.ObjectMeta{Name: fuzzSBPCollector},
		Spec: controlv1alpha1.StatusCollectorSpec{
			CombinedFields: []controlv1alpha1.NamedAggregator{
				{Name: "count", Type: controlv1alpha1.AggregatorTypeCount},
				{Name: "available", Type: controlv1alpha1.AggregatorTypeSum, Subject: &available},
			},
			Limit: 20,
		},
	})
	labels := map[string]string{"app.kubernetes.io/name": fuzzSBPApp}
	Expect(k8sClient.Create(suiteCtx, &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: fuzzSBPApp, Namespace: ns, Labels: labels},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "registry.k8s.io/pause:3.10"}}},
			},
		},
	})).To(Succeed())
}

// sbpStage is a stage on the fixture's clusters of tier.
func sbpStage(name, tier string, fields jsonObj) jsonObj {
	st := jsonObj{"name": name, "clusterSelectors": []any{jsonObj{"matchLabels": jsonObj{fuzzSBPTier: tier}}}}
	for k, v := range fields {
		st[k] = v
	}
	return st
}

// sbpSeeds reads the stager's example (config/samples) and adds policies over the fixture: gated dev and
// prod stages with a soak and a deadline, a cumulative rollout waiting for approval with a failure
// condition, and a paused one.
func sbpSeeds(root string) ([]jsonObj, error) {
	objs, err := readManifest(filepath.Join(root, "config", "samples", "stagedbindingpolicy.yaml"))
	if err != nil {
		return nil, err
	}
	sbp := func(spec jsonObj) jsonObj {
		spec["downsync"] = []any{jsonObj{
			"objectSelectors":  []any{jsonObj{"matchLabels": jsonObj{"app.kubernetes.io/name": fuzzSBPApp}}},
			"statusCollectors": []any{fuzzSBPCollector},
		}}
		return toJSONObj(jsonObj{"apiVersion": communityv1alpha1.GroupVersion.String(), "kind": "StagedBindingPolicy",
			"metadata": jsonObj{}, "spec": spec})
	}
	gate := validCEL[celCondition][0]
	seeds := []jsonObj{
		sbp(jsonObj{"stages": []any{
			sbpStage("dev", "dev", jsonObj{"filter": validCEL[celFilter][0], "condition": gate, "minDuration": "2s", "progressDeadline": "10m"}),
			sbpStage("prod", "prod", jsonObj{"condition": gate}),
		}}),
		sbp(jsonObj{"mode": "Cumulative", "stages": []any{
			sbpStage("dev", "dev", jsonObj{"condition": validCEL[celCondition][1], "failureCondition": validCEL[celFailureCondition][0]}),
			sbpStage("prod", "prod", jsonObj{"requireApproval": true, "onTimeout": "Halt", "progressDeadline": "1h"}),
		}}),
		sbp(jsonObj{"paused": true, "stages": []any{sbpStage("only", "dev", jsonObj{"condition": validCEL[celCondition][2]})}}),
	}
	for _, o := range objs {
		if o["kind"] == "StagedBindingPolicy" {
			seeds = append(seeds, o)
		}
	}
	return seeds, nil
}

func sbpFuzzKind(seeds []jsonObj) *fuzzKind {
	return &fuzzKind{
		kind: "StagedBindingPolicy", abbr: "sbp", resource: "stagedbindingpolicies",
		groupVersion: communityv1alpha1.GroupVersion.String(),
		controllers:  []string{"stagedbindingpolicy"},
		seeds:        seeds,
		mutations: []mutation{
			{"bad-cel", mutSBPExpression(invalidCEL, true)},
			{"dyn-result", mutSBPExpression(dynCEL, false)},
			{"overlong-expression", mutSBPOverlong},
			{"bad-duration", mutSBPDuration},
			{"deadline-before-soak", mutSBPDeadlineBeforeSoak},
			{"duplicate-stage", mutSBPDuplicateStage},
			{"too-many-stages", mutSBPTooManyStages},
			{"bad-stage-name", mutSBPStage(func(g *fuzzGen, _ jsonObj) (string, any, bool) {
				return "name", pick(g, []any{"Dev", "a_b", "", strings.Repeat("s", 64), "-x", "x.y", json.Number("1")}), true
			})},
			{"bad-on-timeout", mutSBPStage(func(g *fuzzGen, _ jsonObj) (string, any, bool) {
				return "onTimeout", pick(g, []any{"Continue", "halt", json.Number("1")}), true
			})},
			{"bad-cluster-selectors", mutSBPStage(func(g *fuzzGen, _ jsonObj) (string, any, bool) {
				return "clusterSelectors", pick(g, []any{[]any{}, []any{jsonObj{"matchExpressions": []any{
					jsonObj{"key": fuzzSBPTier, "operator": "Bogus", "values": []any{"dev"}}}}}, []any{jsonObj{"matchLabels": jsonObj{"bad key": "x"}}}}), true
			})},
			{"bad-mode", mutSet(jsonPath{"spec", "mode"}, "Fast", "exclusive", json.Number("1"))},
			{"bad-downsync", mutSet(jsonPath{"spec", "downsync"}, []any{}, []any{jsonObj{}},
				[]any{jsonObj{"statusCollectors": []any{"Bad_Name"}, "resources": []any{"deployments"}}},
				[]any{jsonObj{"objectSelectors": []any{jsonObj{"matchLabels": jsonObj{"-bad": "x"}}}}})},
			{"long-name", mutSet(jsonPath{"metadata", "name"}, "fz-sbp-"+strings.Repeat("n", 57))},
			{"approve-annotation", mutSBPApprove},
		},
		validEdits: sbpValidEdits(),
		nudge: func(_ jsonObj, round int) jsonObj {
			return jsonObj{"metadata": jsonObj{"annotations": jsonObj{fuzzNudgeKey: strconv.Itoa(round)}}}
		},
	}
}

func sbpValidEdits() []mutation {
	return []mutation{
		{"edit-paused", func(g *fuzzGen, o jsonObj) (change, bool) {
			v := g.chance(0.5)
			ensureObj(o, "spec")["paused"] = v
			return describe("edit", jsonPath{"spec", "paused"}, v, false), true
		}},
		{"edit-mode", mutEditEnum(jsonPath{"spec", "mode"}, "Exclusive", "Cumulative")},
		{"edit-condition", mutSBPStage(func(g *fuzzGen, _ jsonObj) (string, any, bool) {
			return celCondition, pick(g, validCEL[celCondition]), false
		})},
		{"edit-soak", mutSBPStage(func(g *fuzzGen, st jsonObj) (string, any, bool) {
			st["progressDeadline"] = "5m"
			return "minDuration", pick(g, []any{"1s", "3s", "1m"}), false
		})},
		{"edit-approval", mutSBPStage(func(g *fuzzGen, _ jsonObj) (string, any, bool) {
			return "requireApproval", g.chance(0.5), false
		})},
	}
}

// mutEditEnum sets the string at p to one of values, each valid.
func mutEditEnum(p jsonPath, values ...string) func(g *fuzzGen, o jsonObj) (change, bool) {
	return func(g *fuzzGen, o jsonObj) (change, bool) {
		ensurePath(o, p[:len(p)-1])
		v := pick(g, values)
		setPath(o, p, v)
		return describe("edit", p, v, false), true
	}
}

// pickStage returns a random stage of o.
func (g *fuzzGen) pickStage(o jsonObj) (jsonPath, jsonObj, bool) {
	l, _ := getPath(o, sbpStages)
	stages, _ := l.([]any)
	if len(stages) == 0 {
		return nil, nil, false
	}
	i := g.intn(len(stages))
	st, ok := stages[i].(jsonObj)
	return sbpStages.child(i), st, ok
}

// mutSBPStage sets a field of a random stage to what set returns (set may adjust the stage first); invalid
// says whether the value makes the policy invalid.
func mutSBPStage(set func(g *fuzzGen, st jsonObj) (string, any, bool)) func(g *fuzzGen, o jsonObj) (change, bool) {
	return func(g *fuzzGen, o jsonObj) (change, bool) {
		p, st, ok := g.pickStage(o)
		if !ok {
			return change{}, false
		}
		field, v, invalid := set(g, st)
		st[field] = v
		return describe("stage", p.child(field), v, invalid), true
	}
}

// mutSBPExpression sets a random expression field of a random stage to one of exprs[field]; invalid says
// whether every one of them is refused.
func mutSBPExpression(exprs map[string][]string, invalid bool) func(g *fuzzGen, o jsonObj) (change, bool) {
	return mutSBPStage(func(g *fuzzGen, _ jsonObj) (string, any, bool) {
		field := pick(g, celFields)
		return field, pick(g, exprs[field]), invalid
	})
}

func mutSBPOverlong(g *fuzzGen, o jsonObj) (change, bool) {
	return mutSBPStage(func(g *fuzzGen, _ jsonObj) (string, any, bool) {
		n := communityv1alpha1.MaxExpressionLength + pick(g, []int{1, 100, 50000})
		return pick(g, celFields), overlongCEL(n), true
	})(g, o)
}

// mutSBPDuration sets minDuration or progressDeadline of a stage to a value that is no positive duration.
func mutSBPDuration(g *fuzzGen, o jsonObj) (change, bool) {
	return mutSBPStage(func(g *fuzzGen, _ jsonObj) (string, any, bool) {
		v := pick(g, []any{"-1s", "0s", "abc", "1x", "10", json.Number("5"), "", "-5m"})
		return pick(g, []string{"minDuration", "progressDeadline"}), v, true
	})(g, o)
}

// mutSBPDeadlineBeforeSoak gives a stage a progress deadline shorter than its soak. Two fields make it
// invalid, so the change is the stage's: a later change of either cancels it.
func mutSBPDeadlineBeforeSoak(g *fuzzGen, o jsonObj) (change, bool) {
	p, st, ok := g.pickStage(o)
	if !ok {
		return change{}, false
	}
	st["minDuration"], st["progressDeadline"] = "10m", "1m"
	return change{Mutation: "deadline-before-soak", Path: p.String(), Desc: p.String() + ": minDuration 10m, progressDeadline 1m", Invalid: true}, true
}

// mutSBPDuplicateStage appends a copy of a stage: its name twice.
func mutSBPDuplicateStage(g *fuzzGen, o jsonObj) (change, bool) {
	p, st, ok := g.pickStage(o)
	if !ok {
		return change{}, false
	}
	l, _ := getPath(o, sbpStages)
	setPath(o, sbpStages, append(l.([]any), cloneJSON(st)))
	return change{Mutation: "duplicate-stage", Path: sbpStages.String(), Desc: p.String() + " twice", Invalid: true}, true
}

// mutSBPTooManyStages gives the policy more stages than the CRD allows, each valid on its own.
func mutSBPTooManyStages(g *fuzzGen, o jsonObj) (change, bool) {
	n := communityv1alpha1.MaxStages + pick(g, []int{1, 8})
	stages := make([]any, n)
	for i := range stages {
		stages[i] = sbpStage(fmt.Sprintf("s%d", i), "dev", jsonObj{"condition": validCEL[celCondition][1]})
	}
	ensureObj(o, "spec")["stages"] = stages
	return change{Mutation: "too-many-stages", Path: sbpStages.String(), Desc: fmt.Sprintf("%d stages", n), Invalid: true}, true
}

// mutSBPApprove sets the approval annotation to a stage of the policy or to none: admitted with a warning at
// most.
func mutSBPApprove(g *fuzzGen, o jsonObj) (change, bool) {
	v := "nosuch"
	if _, st, ok := g.pickStage(o); ok && g.chance(0.5) {
		v, _ = st["name"].(string)
	}
	p := jsonPath{"metadata", "annotations", communityv1alpha1.AnnotationApproveStage}
	ensurePath(o, p[:2])[communityv1alpha1.AnnotationApproveStage] = v
	return describe("approve", p, v, false), true
}
