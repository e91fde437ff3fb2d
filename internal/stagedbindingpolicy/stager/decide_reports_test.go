package stager

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	communityv1alpha1 "github.com/drover-dev/drover/api/kubestellar/community/v1alpha1"
	controlv1alpha1 "github.com/drover-dev/drover/api/kubestellar/control/v1alpha1"
	"github.com/drover-dev/drover/internal/stagedbindingpolicy/sbpcel"
	"github.com/drover-dev/drover/internal/testutil"
)

// The example's collector as KubeStellar combines it: count (COUNT) and available
// (SUM(returned.status.availableReplicas)). A cluster that has not reported, or reports a Deployment with
// no available replicas (the key is then absent), fails the available column: its row is left out and a
// rowErrors entry names it, at most one entry per column.
const noSuchKey = "no such key: availableReplicas"

var exampleColumns = []string{"count", "available"}

// prodWorld starts a world with three prod clusters and a policy whose active stage, prod, is gated by
// condition and failure (either may be ""), followed by a stage canary.
func prodWorld(t *testing.T, condition, failure string) *world {
	t.Helper()
	sbp := testutil.MakeSBP(sbpName).UID(sbpUID).Downsync(testutil.ObjectsLabelled("app.kubernetes.io/name", "nginx", aggregator)).
		Stage("prod", testutil.MatchLabels("env", "prod"))
	if condition != "" {
		sbp = sbp.Condition(condition)
	}
	if failure != "" {
		sbp = sbp.FailureCondition(failure)
	}
	sbp = sbp.Stage("canary", testutil.MatchLabels("env", "canary"))
	w := newWorld(t, sbp.Obj())
	w.clusters = map[string]map[string]string{
		"prod-1": {"env": "prod"}, "prod-2": {"env": "prod"}, "prod-3": {"env": "prod"}, "canary-1": {"env": "canary"},
	}
	w.activate()
	return w
}

// combined places the Deployment's CombinedStatus of the prod stage, with the given rows and row errors
// (cluster → column), as KubeStellar writes it.
func (w *world) combined(rows [][]controlv1alpha1.Value, rowErrors map[string]string) {
	w.t.Helper()
	name := BindingPolicyName(w.sbp.Name, "prod")
	bp := w.bps[name]
	cs := testutil.MakeCombinedStatus(nginxDeployment.uid, name, bp.UID).
		Workload(nginxDeployment.apiVersion, nginxDeployment.kind, nginxDeployment.resource, nginxDeployment.namespace, nginxDeployment.name).
		Created(w.now).Result(aggregator, exampleColumns, rows...)
	for cluster, column := range rowErrors {
		cs = cs.RowError(cluster, column, noSuchKey)
	}
	w.css = []*unstructured.Unstructured{cs.Obj()}
}

func numbers(values ...string) []controlv1alpha1.Value {
	out := make([]controlv1alpha1.Value, len(values))
	for i, v := range values {
		out[i] = testutil.NumberValue(v)
	}
	return out
}

// countMatchesAvailable is a condition written for KubeStellar's counts: every counted cluster has all its
// replicas available. On its own it holds as soon as one cluster reports, since the others have no row.
const countMatchesAvailable = `results['deployments-aggregator'].exists(r, r.count == r.available)`

// waiting checks that the prod stage waits for prod-1's report: not promoted, not halted, no gate error,
// the outcome NotSatisfied with reason AwaitingStatus, and prod-1 named in the status and the message.
func waiting(t *testing.T, d *Decision) {
	t.Helper()
	e := entry(t, d.Status, "prod")
	if e.Result != communityv1alpha1.StageActive || d.Promoted != "" {
		t.Fatalf("prod = %s (promoted %q), want Active: the stage must wait", e.Result, d.Promoted)
	}
	if c := condition(t, d.Status, communityv1alpha1.ConditionProgressing); c.Reason != communityv1alpha1.ReasonAwaitingStatus ||
		!strings.Contains(c.Message, "awaiting reports from prod-1") {
		t.Errorf("Progressing = %s: %q, want AwaitingStatus naming prod-1", c.Reason, c.Message)
	}
	for _, typ := range []string{communityv1alpha1.ConditionGateError, communityv1alpha1.ConditionHalted} {
		if c := condition(t, d.Status, typ); c.Status != metav1.ConditionFalse {
			t.Errorf("%s = %s (%s), want False", typ, c.Status, c.Message)
		}
	}
	ev := e.LastEvaluation
	if ev == nil || ev.Outcome != communityv1alpha1.OutcomeNotSatisfied || ev.ObjectsWithStatus != 1 || ev.ObjectsSatisfied != 0 {
		t.Fatalf("evaluation = %+v, want NotSatisfied with 1 object with status, none satisfied", ev)
	}
	if diff := cmp.Diff([]string{"prod-1"}, ev.AwaitingDestinations); diff != "" {
		t.Errorf("awaitingDestinations (-want +got):\n%s", diff)
	}
}

// TestConditionWaitsForUnreportedDestinations: the CombinedStatus KubeStellar writes when prod-1 has not
// reported, prod-2 reports zero available replicas and prod-3 reports its one replica has one row (prod-3's:
// count 1, available 1) and one row error (prod-1's; KubeStellar names one cluster per failing column). Both
// the example's condition and a count-equals-available condition hold on that row, yet the stage must wait;
// once every cluster has its row the condition decides.
func TestConditionWaitsForUnreportedDestinations(t *testing.T) {
	cases := map[string]struct {
		condition  string
		afterAll   []controlv1alpha1.Value
		wantResult communityv1alpha1.StageResult
	}{
		"the example's condition":              {condition: seedCondition, afterAll: numbers("3", "3"), wantResult: communityv1alpha1.StageActive},
		"count equals available":               {condition: countMatchesAvailable, afterAll: numbers("3", "3"), wantResult: communityv1alpha1.StageSucceeded},
		"count equals available, one is short": {condition: countMatchesAvailable, afterAll: numbers("3", "2"), wantResult: communityv1alpha1.StageActive},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			w := prodWorld(t, tc.condition, "")
			w.combined([][]controlv1alpha1.Value{numbers("1", "1")}, map[string]string{"prod-1": "available"})
			w.tick(time.Second)
			waiting(t, w.step())

			w.combined([][]controlv1alpha1.Value{tc.afterAll}, nil)
			w.tick(time.Second)
			d := w.step()
			if got := entry(t, d.Status, "prod").Result; got != tc.wantResult {
				t.Errorf("once every cluster reported, prod = %s, want %s", got, tc.wantResult)
			}
			if ev := entry(t, d.Status, "prod").LastEvaluation; ev == nil || len(ev.AwaitingDestinations) != 0 {
				t.Errorf("once every cluster reported, the evaluation still names destinations: %+v", ev)
			}
		})
	}
}

// TestFailureConditionWaitsForMissingRow: before any prod cluster has its row, the collector has no row at
// all; a failure condition "no row shows an available replica" would hold on that, but must not halt the
// stage. Once every cluster has its row, it halts as it should.
func TestFailureConditionWaitsForMissingRow(t *testing.T) {
	const noneAvailable = `!results['deployments-aggregator'].exists(r, r.available >= 1.0)`
	w := prodWorld(t, countMatchesAvailable, noneAvailable)
	w.combined(nil, map[string]string{"prod-1": "available"})
	w.tick(time.Second)
	waiting(t, w.step())

	w.combined([][]controlv1alpha1.Value{numbers("3", "0")}, nil)
	w.tick(time.Second)
	d := w.step()
	if e := entry(t, d.Status, "prod"); e.Result != communityv1alpha1.StageHalted {
		t.Fatalf("prod = %s, want Halted by the failure condition once every cluster has its row", e.Result)
	}
	if c := condition(t, d.Status, communityv1alpha1.ConditionHalted); c.Reason != communityv1alpha1.ReasonFailureCondition {
		t.Errorf("Halted reason = %s, want %s", c.Reason, communityv1alpha1.ReasonFailureCondition)
	}
}

// TestRowErrorOfAFormerDestinationDoesNotHold: a row error naming a cluster that is no longer a destination
// does not make the stage wait.
func TestRowErrorOfAFormerDestinationDoesNotHold(t *testing.T) {
	w := prodWorld(t, countMatchesAvailable, "")
	w.combined([][]controlv1alpha1.Value{numbers("3", "3")}, map[string]string{"prod-9": "available"})
	w.tick(time.Second)
	if got := entry(t, w.step().Status, "prod").Result; got != communityv1alpha1.StageSucceeded {
		t.Errorf("prod = %s, want Succeeded", got)
	}
}

// TestUngatedStageDoesNotWaitForRows: a stage without condition and failureCondition is promoted once its
// objects have a CombinedStatus, row errors or not: the example's prod stage selects Pods too, and a Pod never
// reports an availableReplicas for the example's SUM.
func TestUngatedStageDoesNotWaitForRows(t *testing.T) {
	w := prodWorld(t, "", "")
	w.combined(nil, map[string]string{"prod-1": "available"})
	w.tick(time.Second)
	d := w.step()
	if got := entry(t, d.Status, "prod").Result; got != communityv1alpha1.StageSucceeded {
		t.Errorf("prod = %s, want Succeeded", got)
	}
}

// TestGuidePatterns evaluates the condition patterns the user guide recommends for CombinedStatuses with
// missing rows on the example's collector over three destinations: true once every cluster has all its
// replicas, false when a cluster has fewer, false (not an error) when the collector has no row.
func TestGuidePatterns(t *testing.T) {
	dests := []string{"prod-1", "prod-2", "prod-3"}
	patterns := []string{
		"results['deployments-aggregator'].exists(r,\n  r.count == double(size(destinations)) && r.available >= r.count)",
		"results['deployments-aggregator'].exists(r, r.?available.orValue(0.0) >= 3.0)",
	}
	cases := map[string]struct {
		rows [][]controlv1alpha1.Value
		want bool
	}{
		"every cluster has its replica": {rows: [][]controlv1alpha1.Value{numbers("3", "3")}, want: true},
		"one cluster is short":          {rows: [][]controlv1alpha1.Value{numbers("3", "2")}},
		"no row":                        {},
	}
	for _, expr := range patterns {
		prog, err := testCEL.Compile(sbpcel.Condition, expr)
		if err != nil {
			t.Fatalf("compiling %s: %v", expr, err)
		}
		for name, tc := range cases {
			cs := testutil.MakeCombinedStatus(nginxDeployment.uid, prodName, "bp-uid").Result(aggregator, exampleColumns, tc.rows...).Obj()
			got, err := prog.Eval(sbpcel.Input{Destinations: dests, CombinedStatus: &sbpcel.CSInput{Object: cs.Object}})
			if err != nil || got != tc.want {
				t.Errorf("%s on %s = %v, %v; want %v", expr, name, got, err, tc.want)
			}
		}
	}
	if _, err := testCEL.Compile(sbpcel.FailureCondition, "results['my-collector'].exists(r, r.?failed.orValue(0.0) > 0.0)"); err != nil {
		t.Errorf("the guide's failure condition does not compile: %v", err)
	}
}

// TestGuideSelectPattern: in a select collector an unreported cluster still has a row, whose failing cell
// is a String holding the error and no row error; the guide's pattern checks the value's type, so it is
// false (not an evaluation error) until every row holds a number.
func TestGuideSelectPattern(t *testing.T) {
	const expr = "results['per-cluster'].all(r, type(r.available) == double && r.available >= 1.0)"
	prog, err := testCEL.Compile(sbpcel.Condition, expr)
	if err != nil {
		t.Fatalf("compiling %s: %v", expr, err)
	}
	columns := []string{"cluster", "available"}
	cases := map[string]struct {
		rows [][]controlv1alpha1.Value
		want bool
	}{
		"every cluster reported": {rows: [][]controlv1alpha1.Value{
			{testutil.StringValue("prod-1"), testutil.NumberValue("1")}, {testutil.StringValue("prod-2"), testutil.NumberValue("2")},
		}, want: true},
		"one has not reported": {rows: [][]controlv1alpha1.Value{
			{testutil.StringValue("prod-1"), testutil.NumberValue("1")}, {testutil.StringValue("prod-2"), testutil.StringValue(noSuchKey)},
		}},
	}
	for name, tc := range cases {
		cs := testutil.MakeCombinedStatus(nginxDeployment.uid, prodName, "bp-uid").Result("per-cluster", columns, tc.rows...).Obj()
		got, err := prog.Eval(sbpcel.Input{Destinations: []string{"prod-1", "prod-2"}, CombinedStatus: &sbpcel.CSInput{Object: cs.Object}})
		if err != nil || got != tc.want {
			t.Errorf("%s = %v, %v; want %v", name, got, err, tc.want)
		}
	}
}
