package stager

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	communityv1alpha1 "github.com/drover-dev/drover/api/kubestellar/community/v1alpha1"
	controlv1alpha1 "github.com/drover-dev/drover/api/kubestellar/control/v1alpha1"
	"github.com/drover-dev/drover/internal/stagedbindingpolicy/sbpcel"
	"github.com/drover-dev/drover/internal/testutil"
)

// The tests drive Decide through a small world: a StagedBindingPolicy, the BindingPolicies, Bindings and
// CombinedStatuses KubeStellar would hold, and a clock. Between passes the tests play KubeStellar by hand
// (world.process, world.report), so every pass sees what a controller would observe.

var (
	// t0 is the fixed time of the first pass.
	t0 = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	// testCEL is shared by every test, as the controller shares one cache across passes.
	testCEL = sbpcel.NewCache(sbpcel.Options{})
)

const (
	sbpName              = "nginx"
	sbpUID     types.UID = "sbp-uid-1"
	devName              = "nginx.stage.dev"
	prodName             = "nginx.stage.prod"
	aggregator           = "deployments-aggregator"
	// seedCondition is the seed README's condition: any Number column of deployments-aggregator reads "1".
	seedCondition = `combinedStatus.results.exists(r, r.name == 'deployments-aggregator' &&
  r.rows.exists(row, row.columns.exists(col, col.type == 'Number' && col.float == '1')))`
	// failsOnTwo is a failure condition: a Number column reads "2".
	failsOnTwo = `combinedStatus.results.exists(r, r.rows.exists(row, row.columns.exists(col, col.type == 'Number' && col.float == '2')))`
)

// workload is one object the downsync selects.
type workload struct {
	apiVersion, kind, resource, namespace, name string
	uid                                         types.UID
}

func (o workload) group() string {
	g, _, found := strings.Cut(o.apiVersion, "/")
	if !found {
		return ""
	}
	return g
}

func (o workload) version() string {
	if _, v, found := strings.Cut(o.apiVersion, "/"); found {
		return v
	}
	return o.apiVersion
}

var (
	nginxDeployment = workload{"apps/v1", "Deployment", "deployments", "nginx", "nginx-deployment", "dep-uid-1"}
	nginxService    = workload{"v1", "Service", "services", "nginx", "nginx-service", "svc-uid-1"}
)

// twoStages is a policy with a gated dev stage (the seed's condition) and an ungated prod stage.
func twoStages() *testutil.SBPWrapper {
	return testutil.MakeSBP(sbpName).UID(sbpUID).
		Downsync(testutil.ObjectsLabelled("app.kubernetes.io/name", "nginx", aggregator)).
		Stage("dev", testutil.MatchLabels("env", "dev")).Condition(seedCondition).
		Stage("prod", testutil.MatchLabels("env", "prod"))
}

// world is what one policy's passes observe, advanced by hand between passes.
type world struct {
	t        *testing.T
	now      time.Time
	sbp      *communityv1alpha1.StagedBindingPolicy
	bps      map[string]*controlv1alpha1.BindingPolicy
	bindings map[string]*controlv1alpha1.Binding
	css      []*unstructured.Unstructured
	clusters map[string]map[string]string
	objects  []workload
	uids     int
}

// newWorld starts a world at t0 with the policy, one dev and one prod cluster, and the nginx Deployment.
func newWorld(t *testing.T, sbp *communityv1alpha1.StagedBindingPolicy) *world {
	t.Helper()
	return &world{
		t: t, now: t0, sbp: sbp.DeepCopy(),
		bps:      map[string]*controlv1alpha1.BindingPolicy{},
		bindings: map[string]*controlv1alpha1.Binding{},
		clusters: map[string]map[string]string{"dev-1": {"env": "dev"}, "prod-1": {"env": "prod"}},
		objects:  []workload{nginxDeployment},
	}
}

// observed is what a pass reads: copies of every object of the world.
func (w *world) observed() Observed {
	obs := Observed{BindingPolicies: map[string]*controlv1alpha1.BindingPolicy{}, Bindings: map[string]*controlv1alpha1.Binding{}}
	for n, bp := range w.bps {
		obs.BindingPolicies[n] = bp.DeepCopy()
	}
	for n, b := range w.bindings {
		obs.Bindings[n] = b.DeepCopy()
	}
	for _, cs := range w.css {
		obs.CombinedStatuses = append(obs.CombinedStatuses, cs.DeepCopy())
	}
	return obs
}

// pass runs Decide on the world and checks that it modified none of its input.
func (w *world) pass() *Decision {
	w.t.Helper()
	in := Input{SBP: w.sbp.DeepCopy(), Observed: w.observed(), Now: w.now, CEL: testCEL}
	before, observed := in.SBP.DeepCopy(), w.observed()
	d := Decide(in)
	if diff := cmp.Diff(before, in.SBP); diff != "" {
		w.t.Fatalf("Decide modified the policy (-before +after):\n%s", diff)
	}
	if diff := cmp.Diff(observed, in.Observed); diff != "" {
		w.t.Fatalf("Decide modified the observed objects (-before +after):\n%s", diff)
	}
	return d
}

// apply carries a decision out as the controller would: the status, the annotation removals and the
// BindingPolicy writes and deletions (KubeStellar's finalizer aside, a deletion is immediate and takes the
// Binding and the CombinedStatuses with it).
func (w *world) apply(d *Decision) {
	w.sbp.Status = *d.Status.DeepCopy()
	for _, r := range d.AnnotationRemovals {
		if v, ok := w.sbp.Annotations[r.Key]; ok && v == r.Value {
			delete(w.sbp.Annotations, r.Key)
		}
	}
	for _, wr := range d.Writes {
		switch wr.Kind {
		case WriteCreate:
			w.uids++
			bp := testutil.WrapBindingPolicy(wr.Desired).UID(types.UID(fmt.Sprintf("bp-uid-%d", w.uids))).Created(w.now).Obj()
			w.bps[bp.Name] = bp
		default:
			old := w.bps[wr.Desired.Name]
			bp := MergeDesired(old, wr.Desired)
			if !cmp.Equal(old.Spec, bp.Spec) {
				bp.Generation++
			}
			w.bps[bp.Name] = bp
		}
	}
	for _, del := range d.Deletes {
		w.deleteBindingPolicy(del.Name)
	}
}

// step runs a pass and applies it.
func (w *world) step() *Decision {
	w.t.Helper()
	d := w.pass()
	w.apply(d)
	return d
}

// deleteBindingPolicy removes a BindingPolicy, its Binding and its CombinedStatuses.
func (w *world) deleteBindingPolicy(name string) {
	delete(w.bps, name)
	delete(w.bindings, name)
	w.css = slices.DeleteFunc(w.css, func(cs *unstructured.Unstructured) bool {
		return cs.GetLabels()[controlv1alpha1.LabelCombinedStatusBindingPolicy] == name
	})
}

// process plays KubeStellar on every BindingPolicy: the Binding (destinations from the cluster labels, every
// object of the world with the collectors of all clauses), then the BindingPolicy's observed generation and
// StatusCollectorsAvailable condition.
func (w *world) process() {
	w.t.Helper()
	for _, name := range slices.Sorted(maps.Keys(w.bps)) {
		bp := w.bps[name]
		if bp.DeletionTimestamp != nil {
			continue
		}
		var collectors []string
		for _, c := range bp.Spec.Downsync {
			collectors = append(collectors, c.StatusCollectors...)
		}
		slices.Sort(collectors)
		collectors = slices.Compact(collectors)
		b := testutil.MakeBinding(name).ControlledBy(name, bp.UID).StatusCollectorsAvailable()
		for _, id := range slices.Sorted(maps.Keys(w.clusters)) {
			if w.selects(bp.Spec.ClusterSelectors, w.clusters[id]) {
				b.Destinations(id)
			}
		}
		for _, o := range w.objects {
			b.NamespaceObject(o.group(), o.version(), o.resource, o.namespace, o.name, collectors...)
		}
		w.bindings[name] = b.Obj()
		bp.Status.ObservedGeneration = bp.Generation
		bp.Status.Conditions = b.Status.Conditions
	}
}

func (w *world) selects(selectors []metav1.LabelSelector, clusterLabels map[string]string) bool {
	for i := range selectors {
		sel, err := metav1.LabelSelectorAsSelector(&selectors[i])
		if err != nil {
			w.t.Fatalf("selector: %v", err)
		}
		if sel.Matches(labels.Set(clusterLabels)) {
			return true
		}
	}
	return false
}

// report plays KubeStellar reporting o under the current BindingPolicy of stage: a CombinedStatus created
// now whose deployments-aggregator row holds one Number column, replacing an earlier one of the object.
func (w *world) report(stage string, o workload, number string) {
	w.t.Helper()
	name := BindingPolicyName(w.sbp.Name, stage)
	bp := w.bps[name]
	if bp == nil {
		w.t.Fatalf("report: BindingPolicy %s does not exist", name)
	}
	cs := testutil.MakeCombinedStatus(o.uid, name, bp.UID).Workload(o.apiVersion, o.kind, o.resource, o.namespace, o.name).
		Created(w.now).Result(aggregator, []string{"count"}, []controlv1alpha1.Value{testutil.NumberValue(number)}).Obj()
	w.css = slices.DeleteFunc(w.css, func(old *unstructured.Unstructured) bool { return old.GetName() == cs.GetName() })
	w.css = append(w.css, cs)
}

// activate brings the policy to a current first stage: the activating pass, applied and processed.
func (w *world) activate() {
	w.t.Helper()
	w.step()
	w.process()
}

// tick advances the clock.
func (w *world) tick(d time.Duration) { w.now = w.now.Add(d) }

// summary is what a table case checks of a decision.
type summary struct {
	Phase     communityv1alpha1.Phase
	Active    string
	Index     int32
	Stages    []string // "<stage>=<result>", in status order
	Reason    string   // the Progressing condition's reason
	Events    []string
	Writes    []string // "<kind> <name>"
	Deletes   []string
	Removals  []string // "<key>=<value>"
	Commit    bool
	Promotion bool
	Requeue   time.Duration
}

func summarize(d *Decision) summary {
	s := summary{Phase: d.Status.Phase, Active: d.Status.ActiveStage, Events: d.Events.Reasons(),
		Commit: d.Commit, Promotion: d.Promoted != "", Requeue: d.RequeueAfter, Index: -1}
	if d.Status.ActiveStageIndex != nil {
		s.Index = *d.Status.ActiveStageIndex
	}
	for _, e := range d.Status.Stages {
		s.Stages = append(s.Stages, e.Name+"="+string(e.Result))
	}
	if c := meta.FindStatusCondition(d.Status.Conditions, communityv1alpha1.ConditionProgressing); c != nil {
		s.Reason = c.Reason
	}
	for _, wr := range d.Writes {
		s.Writes = append(s.Writes, string(wr.Kind)+" "+wr.Desired.Name)
	}
	for _, del := range d.Deletes {
		s.Deletes = append(s.Deletes, del.Name)
	}
	for _, r := range d.AnnotationRemovals {
		s.Removals = append(s.Removals, r.Key+"="+r.Value)
	}
	if len(s.Events) == 0 {
		s.Events = nil
	}
	return s
}

// checkSummary compares a decision with the summary a case wants.
func checkSummary(t *testing.T, d *Decision, want summary) {
	t.Helper()
	if diff := cmp.Diff(want, summarize(d)); diff != "" {
		t.Errorf("decision (-want +got):\n%s", diff)
	}
}

// checkRepeat runs the pass again on the status it decided (annotation removals applied, BindingPolicy
// writes not: a restart between the commit and the writes) and checks that it commits nothing, raises no
// event, plans the same writes and deletions and decides the same status.
func checkRepeat(t *testing.T, w *world, d *Decision) {
	t.Helper()
	again := &world{t: t, now: w.now, sbp: w.sbp.DeepCopy(), bps: w.bps, bindings: w.bindings, css: w.css}
	again.sbp.Status = *d.Status.DeepCopy()
	for _, r := range d.AnnotationRemovals {
		if again.sbp.Annotations[r.Key] == r.Value {
			delete(again.sbp.Annotations, r.Key)
		}
	}
	d2 := again.pass()
	first, second := summarize(d), summarize(d2)
	if d2.Commit || len(d2.Events.Reasons()) > 0 {
		t.Errorf("repeating the pass on its own status committed %v with events %v", d2.Commit, d2.Events.Reasons())
	}
	if diff := cmp.Diff(first.Writes, second.Writes); diff != "" {
		t.Errorf("repeating the pass planned other writes (-first +repeat):\n%s", diff)
	}
	if diff := cmp.Diff(first.Deletes, second.Deletes); diff != "" {
		t.Errorf("repeating the pass planned other deletions (-first +repeat):\n%s", diff)
	}
	// The evaluation is made afresh (a stage activated by the first pass is evaluated by the repeat).
	ignoreEvaluation := cmpopts.IgnoreFields(communityv1alpha1.StageStatus{}, "LastEvaluation")
	if diff := cmp.Diff(d.Status, d2.Status, ignoreEvaluation); diff != "" {
		t.Errorf("repeating the pass decided another status (-first +repeat):\n%s", diff)
	}
}

// entry returns the status entry of the stage name (Superseded ones included last), failing without one.
func entry(t *testing.T, st communityv1alpha1.StagedBindingPolicyStatus, name string) communityv1alpha1.StageStatus {
	t.Helper()
	for _, e := range st.Stages {
		if e.Name == name {
			return e
		}
	}
	t.Fatalf("no status entry for stage %s in %+v", name, st.Stages)
	return communityv1alpha1.StageStatus{}
}

// condition returns a condition of the status, failing without one.
func condition(t *testing.T, st communityv1alpha1.StagedBindingPolicyStatus, typ string) metav1.Condition {
	t.Helper()
	c := meta.FindStatusCondition(st.Conditions, typ)
	if c == nil {
		t.Fatalf("no %s condition in %+v", typ, st.Conditions)
		return metav1.Condition{}
	}
	return *c
}

// at is a time as the status holds it.
func at(t time.Time) *metav1.Time {
	mt := metav1.NewTime(t)
	return &mt
}
