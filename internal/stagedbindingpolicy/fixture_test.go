package stagedbindingpolicy

import (
	"context"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	communityv1alpha1 "github.com/drover-dev/drover/api/kubestellar/community/v1alpha1"
	controlv1alpha1 "github.com/drover-dev/drover/api/kubestellar/control/v1alpha1"
	"github.com/drover-dev/drover/internal/kit"
	"github.com/drover-dev/drover/internal/stagedbindingpolicy/sbpcel"
	"github.com/drover-dev/drover/internal/stagedbindingpolicy/stager"
	"github.com/drover-dev/drover/internal/testutil"
)

// The reconciler tests run passes on testutil's fake client, which plays the API server. The reconciler's
// Client reads through a cache the test can hold behind the API server (fixture.holdInCache), and its
// APIReader reads the API server itself; both take injected errors (fixture.failNext). The test plays
// KubeStellar (fixture.process) and the users on the API server directly, uncounted.

// t0 is the time of the first pass: a whole second, as the status stores times.
var t0 = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

const (
	testSBP              = "web"
	testSBPUID types.UID = "sbp-uid-1"
)

var (
	devBP  = stager.BindingPolicyName(testSBP, "dev")
	prodBP = stager.BindingPolicyName(testSBP, "prod")
	// requeueOnConflict is what a pass that lost a race returns (the first conflict in a row).
	requeueOnConflict = ctrl.Result{RequeueAfter: kit.ConflictBaseDelay}
)

// testPolicy places the objects labelled app=web, which name no status collector: a stage's automatic gates
// hold once its BindingPolicy is current with a destination. dev soaks a minute; prod waits for approval.
func testPolicy() *communityv1alpha1.StagedBindingPolicy {
	return testutil.MakeSBP(testSBP).UID(testSBPUID).
		Downsync(testutil.ObjectsLabelled("app", "web")).
		Stage("dev", testutil.MatchLabels("env", "dev")).MinDuration(time.Minute).
		Stage("prod", testutil.MatchLabels("env", "prod")).RequireApproval().Obj()
}

type fixture struct {
	t *testing.T
	// api is the API server's store: the test acts on it directly, bypassing the cache, counts and hooks.
	api    client.WithWatch
	r      *Reconciler
	writes *testutil.Writes
	rec    *events.FakeRecorder
	clock  *clocktesting.FakePassiveClock
	// fail holds the errors the next calls get, by "<verb> <Kind>": "create BindingPolicy",
	// "status-update StagedBindingPolicy", "live-get StagedBindingPolicy" (a read through the APIReader).
	fail map[string][]error
	// cached holds, by "<Kind>/<name>", what the cache shows instead of the stored object (nil: nothing).
	cached map[string]client.Object
	// mu guards fail and cached: the reconciler's executor writes concurrently.
	mu sync.Mutex
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	f := &fixture{t: t, rec: events.NewFakeRecorder(100), clock: clocktesting.NewFakePassiveClock(t0),
		fail: map[string][]error{}, cached: map[string]client.Object{}}
	fc := testutil.NewFakeClient(testutil.FakeClientOptions{
		Objects: []client.Object{testPolicy()},
		Indexes: Indexes(),
		StatusSubresource: []client.Object{
			&communityv1alpha1.StagedBindingPolicy{}, &controlv1alpha1.BindingPolicy{},
		},
		Hooks: interceptor.Funcs{Get: f.cacheGet, List: f.cacheList, Create: f.create, SubResourceUpdate: f.statusUpdate},
	})
	f.api, f.writes = fc.Inner, fc.Writes
	f.r = NewReconciler(Config{
		Client:    fc.Client,
		APIReader: interceptor.NewClient(fc.Inner, interceptor.Funcs{Get: f.liveGet}),
		CEL:       sbpcel.NewCache(sbpcel.Options{}),
		Recorder:  f.rec,
		Clock:     f.clock,
	})
	return f
}

// tick advances the clock by d.
func (f *fixture) tick(d time.Duration) { f.clock.SetTime(f.clock.Now().Add(d)) }

// failNext makes the next call of "<verb> <Kind>" fail with err.
func (f *fixture) failNext(call string, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fail[call] = append(f.fail[call], err)
}

func (f *fixture) injected(verb string, obj runtime.Object) error {
	call := verb + " " + f.kindOf(obj)
	f.mu.Lock()
	defer f.mu.Unlock()
	if errs := f.fail[call]; len(errs) > 0 {
		f.fail[call] = errs[1:]
		return errs[0]
	}
	return nil
}

func (f *fixture) kindOf(obj runtime.Object) string {
	gvk, err := apiutil.GVKForObject(obj, f.api.Scheme())
	if err != nil {
		f.t.Errorf("kind of %T: %v", obj, err) // maybe on an executor's goroutine: no Fatal
	}
	return strings.TrimSuffix(gvk.Kind, "List")
}

func (f *fixture) create(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
	if err := f.injected("create", obj); err != nil {
		return err
	}
	return c.Create(ctx, obj, opts...)
}

func (f *fixture) statusUpdate(ctx context.Context, c client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
	if err := f.injected(sub+"-update", obj); err != nil {
		return err
	}
	return c.SubResource(sub).Update(ctx, obj, opts...)
}

func (f *fixture) liveGet(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if err := f.injected("live-get", obj); err != nil {
		return err
	}
	return c.Get(ctx, key, obj, opts...)
}

// holdInCache makes the cache show copies of objs (as they are now) until cacheCatchesUp, whatever the API
// server holds meanwhile. Every List of their kind returns them: hold only objects every List the
// reconciler makes of their kind would return (the policy's own BindingPolicies).
func (f *fixture) holdInCache(objs ...client.Object) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, o := range objs {
		f.cached[f.kindOf(o)+"/"+o.GetName()] = o.DeepCopyObject().(client.Object)
	}
}

// hideFromCache makes the cache miss obj (its informer has not seen it yet) until cacheCatchesUp.
func (f *fixture) hideFromCache(obj client.Object) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.cached[f.kindOf(obj)+"/"+obj.GetName()] = nil
}

func (f *fixture) cacheCatchesUp() {
	f.mu.Lock()
	defer f.mu.Unlock()
	clear(f.cached)
}

func (f *fixture) cacheGet(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	kind := f.kindOf(obj)
	f.mu.Lock()
	held, ok := f.cached[kind+"/"+key.Name]
	f.mu.Unlock()
	if ok {
		if held == nil {
			return apierrors.NewNotFound(schema.GroupResource{Resource: strings.ToLower(kind) + "s"}, key.Name)
		}
		reflect.ValueOf(obj).Elem().Set(reflect.ValueOf(held.DeepCopyObject()).Elem())
		return nil
	}
	return c.Get(ctx, key, obj, opts...)
}

func (f *fixture) cacheList(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
	if err := c.List(ctx, list, opts...); err != nil {
		return err
	}
	items, err := meta.ExtractList(list)
	if err != nil {
		return err
	}
	kind, listed, shown := f.kindOf(list), map[string]bool{}, make([]runtime.Object, 0, len(items))
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, item := range items {
		key := kind + "/" + item.(client.Object).GetName()
		listed[key] = true
		held, ok := f.cached[key]
		switch {
		case !ok:
			shown = append(shown, item)
		case held != nil:
			shown = append(shown, held.DeepCopyObject())
		}
	}
	for _, key := range slices.Sorted(maps.Keys(f.cached)) {
		if held := f.cached[key]; held != nil && strings.HasPrefix(key, kind+"/") && !listed[key] {
			shown = append(shown, held.DeepCopyObject())
		}
	}
	return meta.SetList(list, shown)
}

// passOutcome is what a test checks of one pass.
type passOutcome struct {
	Result ctrl.Result
	Failed bool           // the pass returned an error
	Writes map[string]int // "<verb> <Kind>": the API writes the reconciler made, failed ones included
	Events []string       // the reasons of the events emitted, in order
}

// pass runs one pass and returns what it came to.
func (f *fixture) pass() passOutcome {
	f.t.Helper()
	f.writes.Take()
	res, err := f.r.Reconcile(context.Background(), ctrl.Request{NamespacedName: types.NamespacedName{Name: testSBP}})
	if err != nil {
		f.t.Logf("pass: %v", err)
	}
	return passOutcome{Result: res, Failed: err != nil, Writes: f.writes.Take(), Events: f.events()}
}

// check runs one pass and compares what it came to with want.
func (f *fixture) check(want passOutcome) {
	f.t.Helper()
	if diff := cmp.Diff(want, f.pass(), cmpopts.EquateEmpty()); diff != "" {
		f.t.Errorf("pass at %s (-want +got):\n%s", f.clock.Now().Format(time.TimeOnly), diff)
	}
}

// bindingPolicyWritesOf keeps the BindingPolicy writes of a pass.
func bindingPolicyWritesOf(o passOutcome) map[string]int {
	out := map[string]int{}
	for k, n := range o.Writes {
		if strings.HasSuffix(k, " BindingPolicy") {
			out[k] = n
		}
	}
	return out
}

func (f *fixture) events() []string {
	var out []string
	for {
		select {
		case e := <-f.rec.Events:
			out = append(out, strings.Fields(e)[1])
		default:
			return out
		}
	}
}

// stored reads an object from the API server; false when it does not exist.
func (f *fixture) stored(name string, obj client.Object) bool {
	f.t.Helper()
	err := f.api.Get(context.Background(), client.ObjectKey{Name: name}, obj)
	if err != nil && !apierrors.IsNotFound(err) {
		f.t.Fatalf("reading %s: %v", name, err)
	}
	return err == nil
}

func (f *fixture) storedSBP() *communityv1alpha1.StagedBindingPolicy {
	f.t.Helper()
	sbp := &communityv1alpha1.StagedBindingPolicy{}
	if !f.stored(testSBP, sbp) {
		f.t.Fatalf("StagedBindingPolicy %s does not exist", testSBP)
	}
	return sbp
}

func (f *fixture) storedBindingPolicy(name string) *controlv1alpha1.BindingPolicy {
	f.t.Helper()
	bp := &controlv1alpha1.BindingPolicy{}
	if !f.stored(name, bp) {
		f.t.Fatalf("BindingPolicy %s does not exist", name)
	}
	return bp
}

func (f *fixture) storedBinding(name string) *controlv1alpha1.Binding {
	f.t.Helper()
	b := &controlv1alpha1.Binding{}
	if !f.stored(name, b) {
		f.t.Fatalf("Binding %s does not exist", name)
	}
	return b
}

// uidOf is the UID of the stored BindingPolicy name.
func (f *fixture) uidOf(name string) types.UID {
	f.t.Helper()
	return f.storedBindingPolicy(name).UID
}

// results renders the stored status's history: "<stage>=<result>".
func (f *fixture) results() []string {
	f.t.Helper()
	var out []string
	for _, e := range f.storedSBP().Status.Stages {
		out = append(out, e.Name+"="+string(e.Result))
	}
	return out
}

// stages renders the stored status's history: "<stage> <result> started=<time> completed=<time>".
func (f *fixture) stages() []string {
	f.t.Helper()
	var out []string
	for _, e := range f.storedSBP().Status.Stages {
		out = append(out, fmt.Sprintf("%s %s started=%s completed=%s", e.Name, e.Result, timeOf(e.StartedAt), timeOf(e.CompletedAt)))
	}
	return out
}

func timeOf(t *metav1.Time) string {
	if t == nil {
		return "-"
	}
	return t.UTC().Format(time.TimeOnly)
}

// bindingPolicies lists the BindingPolicies the API server holds, as "<name> <uid>".
func (f *fixture) bindingPolicies() []string {
	f.t.Helper()
	var list controlv1alpha1.BindingPolicyList
	if err := f.api.List(context.Background(), &list); err != nil {
		f.t.Fatalf("listing BindingPolicies: %v", err)
	}
	var out []string
	for _, bp := range list.Items {
		out = append(out, bp.Name+" "+string(bp.UID))
	}
	slices.Sort(out)
	return out
}

// process plays KubeStellar on every BindingPolicy the API server holds: its Binding, controlled by its
// incarnation and placing the Deployment on its stage's cluster ("<stage>-1"), and its observed generation.
func (f *fixture) process() {
	f.t.Helper()
	var list controlv1alpha1.BindingPolicyList
	f.must(f.api.List(context.Background(), &list))
	for i := range list.Items {
		bp := &list.Items[i]
		f.bind(bp.Name, bp.UID, bp.Labels[communityv1alpha1.LabelStage]+"-1")
		bp.Status.ObservedGeneration = bp.Generation
		f.must(f.api.Status().Update(context.Background(), bp))
	}
}

// bind makes the Binding of the BindingPolicy name anew, as KubeStellar would for its incarnation uid:
// controlled by it, placing the Deployment on clusters.
func (f *fixture) bind(name string, uid types.UID, clusters ...string) {
	f.t.Helper()
	ctx := context.Background()
	if old := (&controlv1alpha1.Binding{}); f.stored(name, old) {
		f.must(f.api.Delete(ctx, old))
	}
	b := testutil.MakeBinding(name).ControlledBy(name, uid).Destinations(clusters...).
		NamespaceObject("apps", "v1", "deployments", "web", "web").Obj()
	f.must(f.api.Create(ctx, b))
}

// recreate deletes the BindingPolicy name and makes it again with the UID uid (a restore from a backup, say),
// and KubeStellar processes the new incarnation.
func (f *fixture) recreate(name string, uid types.UID) {
	f.t.Helper()
	ctx := context.Background()
	bp := f.storedBindingPolicy(name)
	f.must(f.api.Delete(ctx, bp))
	bp.ResourceVersion, bp.UID = "", uid
	f.must(f.api.Create(ctx, bp))
	f.process()
}

// remove deletes objs from the API server.
func (f *fixture) remove(objs ...client.Object) {
	f.t.Helper()
	for _, o := range objs {
		f.must(f.api.Delete(context.Background(), o))
	}
}

func (f *fixture) must(err error) {
	f.t.Helper()
	if err != nil {
		f.t.Fatal(err)
	}
}
