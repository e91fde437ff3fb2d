package stagedbindingpolicy

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	communityv1alpha1 "github.com/drover-dev/drover/api/kubestellar/community/v1alpha1"
	controlv1alpha1 "github.com/drover-dev/drover/api/kubestellar/control/v1alpha1"
	"github.com/drover-dev/drover/internal/stagedbindingpolicy/stager"
	"github.com/drover-dev/drover/internal/testutil"
)

const (
	statusUpdate = "status-update StagedBindingPolicy"
	bpCreate     = "create BindingPolicy"
	bpDelete     = "delete BindingPolicy"
)

var (
	sbpResource = communityv1alpha1.GroupVersion.WithResource("stagedbindingpolicies").GroupResource()
	bpResource  = controlv1alpha1.GroupVersion.WithResource("bindingpolicies").GroupResource()
)

func conflictError() error {
	return apierrors.NewConflict(sbpResource, testSBP, errors.New("the object has been modified"))
}

// soakingDev brings the rollout to dev soaking its minute: the pass that activates dev (its commit, then the
// create of its BindingPolicy), KubeStellar processing the BindingPolicy, and the pass that sees it current.
func (f *fixture) soakingDev() {
	f.t.Helper()
	f.check(passOutcome{Writes: map[string]int{statusUpdate: 1, bpCreate: 1},
		Events: []string{communityv1alpha1.ReasonStageActivated, communityv1alpha1.ReasonBindingPolicyCreated}})
	f.process()
	f.check(passOutcome{Result: ctrl.Result{RequeueAfter: time.Minute}, Writes: map[string]int{statusUpdate: 1},
		Events: []string{communityv1alpha1.ReasonSoaking}})
}

// readyToPromote brings the rollout to dev having soaked its minute: the next pass promotes it.
func (f *fixture) readyToPromote() {
	f.t.Helper()
	f.soakingDev()
	f.tick(time.Minute)
}

// promoted is what the pass that promotes dev comes to: the commit, then the create of prod's BindingPolicy.
var promoted = passOutcome{Writes: map[string]int{statusUpdate: 1, bpCreate: 1},
	Events: []string{communityv1alpha1.ReasonStageSucceeded, communityv1alpha1.ReasonStageActivated, communityv1alpha1.ReasonBindingPolicyCreated}}

// TestCommitRefused: a pass whose commit (the status write carrying a transition) the API server refuses
// writes no BindingPolicy, removes nothing and emits no event: the stored status and BindingPolicies are as
// before. A conflict is a lost race: the pass requeues after the conflict backoff, with no error. Another
// error is returned, for the rate-limited retry. The next pass makes the transition, once.
func TestCommitRefused(t *testing.T) {
	activated := passOutcome{Writes: map[string]int{statusUpdate: 1, bpCreate: 1},
		Events: []string{communityv1alpha1.ReasonStageActivated, communityv1alpha1.ReasonBindingPolicyCreated}}
	cases := map[string]struct {
		setup   func(*fixture)
		err     error
		refused passOutcome
		retry   passOutcome
	}{
		"activation, conflict": {setup: func(*fixture) {}, err: conflictError(),
			refused: passOutcome{Result: requeueOnConflict, Writes: map[string]int{statusUpdate: 1}}, retry: activated},
		"promotion, conflict": {setup: (*fixture).readyToPromote, err: conflictError(),
			refused: passOutcome{Result: requeueOnConflict, Writes: map[string]int{statusUpdate: 1}}, retry: promoted},
		"promotion, server error": {setup: (*fixture).readyToPromote, err: apierrors.NewInternalError(errors.New("etcd leader changed")),
			refused: passOutcome{Failed: true, Writes: map[string]int{statusUpdate: 1}}, retry: promoted},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t)
			tc.setup(f)
			sbp, bps := f.storedSBP(), f.bindingPolicies()
			f.failNext(statusUpdate, tc.err)
			f.check(tc.refused)
			if diff := cmp.Diff(sbp, f.storedSBP()); diff != "" {
				t.Errorf("the refused pass changed the policy (-before +after):\n%s", diff)
			}
			if diff := cmp.Diff(bps, f.bindingPolicies()); diff != "" {
				t.Errorf("the refused pass changed the BindingPolicies (-before +after):\n%s", diff)
			}
			f.check(tc.retry)
		})
	}
}

// TestCreateFailsAfterCommit: the pass that commits a promotion and then fails to create the new stage's
// BindingPolicy returns the error (no watch event would start another pass: the policy's own status writes
// start none) and emits the transition's events once. The next pass, on the committed status, creates the
// BindingPolicy, one create; the handover then ends with one deletion. The transition is not made again:
// its times stay as committed and its events are not emitted again.
func TestCreateFailsAfterCommit(t *testing.T) {
	for name, err := range map[string]error{
		"internal error": apierrors.NewInternalError(errors.New("etcdserver: request timed out")),
		"server timeout": apierrors.NewServerTimeout(bpResource, "create", 1),
	} {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t)
			f.readyToPromote()
			f.failNext(bpCreate, err)
			f.check(passOutcome{Failed: true, Writes: map[string]int{statusUpdate: 1, bpCreate: 1},
				Events: []string{communityv1alpha1.ReasonStageSucceeded, communityv1alpha1.ReasonStageActivated}})
			if diff := cmp.Diff([]string{"dev=Succeeded", "prod=Active"}, f.results()); diff != "" {
				t.Errorf("stages after the commit (-want +got):\n%s", diff)
			}
			committed := f.stages()

			f.tick(time.Second)
			f.check(passOutcome{Writes: map[string]int{statusUpdate: 1, bpCreate: 1}, Events: []string{communityv1alpha1.ReasonBindingPolicyCreated}})
			f.process()
			f.tick(time.Second)
			f.check(passOutcome{Writes: map[string]int{statusUpdate: 1, bpDelete: 1},
				Events: []string{communityv1alpha1.ReasonAwaitingApproval, communityv1alpha1.ReasonBindingPolicyDeleted}})
			f.tick(time.Second)
			f.check(passOutcome{}) // at rest: waiting for the approval of prod

			if diff := cmp.Diff(committed, f.stages()); diff != "" {
				t.Errorf("the transition was made again (-committed +now):\n%s", diff)
			}
			if diff := cmp.Diff([]string{prodBP + " " + string(f.uidOf(prodBP))}, f.bindingPolicies()); diff != "" {
				t.Errorf("BindingPolicies after the handover (-want +got):\n%s", diff)
			}
		})
	}
}

// TestNoBindingPolicyWriteFromStaleCache: a pass that commits nothing writes BindingPolicies only when the
// policy it read from the cache is the one the API server holds (same resourceVersion, read through the
// APIReader): its writes derive from the status, and those of an old status would be undone by the next
// pass, moving the workload twice. Here the cache still holds the policy from before dev's promotion
// (dev active, and no longer promotable: its cluster left), whose status wants prod's new BindingPolicy
// gone; or the API server cannot be read. The pass writes no BindingPolicy and requeues, with no error;
// once the cache has caught up, the next pass makes the handover's deletion of dev's BindingPolicy.
func TestNoBindingPolicyWriteFromStaleCache(t *testing.T) {
	cases := map[string]struct {
		stale   bool
		liveErr error
	}{
		"cache behind the API server": {stale: true},
		"API server not answering":    {liveErr: apierrors.NewServiceUnavailable("the server is currently unable to handle the request")},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t)
			f.readyToPromote()
			beforePromotion := f.storedSBP()
			f.check(promoted)
			f.process()
			f.bind(devBP, f.uidOf(devBP)) // dev's cluster left: no destination
			bps := f.bindingPolicies()
			if tc.stale {
				f.holdInCache(beforePromotion)
			}
			if tc.liveErr != nil {
				f.failNext("live-get StagedBindingPolicy", tc.liveErr)
			}

			got := f.pass()
			if diff := cmp.Diff(passOutcome{Result: requeueOnConflict}, passOutcome{Result: got.Result, Failed: got.Failed,
				Writes: bindingPolicyWritesOf(got)}, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("pass on a stale cache (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(bps, f.bindingPolicies()); diff != "" {
				t.Errorf("the pass on a stale cache changed the BindingPolicies (-before +after):\n%s", diff)
			}

			f.cacheCatchesUp()
			if diff := cmp.Diff(map[string]int{bpDelete: 1}, bindingPolicyWritesOf(f.pass())); diff != "" {
				t.Errorf("BindingPolicy writes once the cache caught up (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff([]string{prodBP + " " + string(f.uidOf(prodBP))}, f.bindingPolicies()); diff != "" {
				t.Errorf("BindingPolicies after the handover (-want +got):\n%s", diff)
			}
		})
	}
}

// TestPromotionRechecksTheAPIServer: before committing a promotion, the pass re-reads the active
// BindingPolicy and its Binding from the API server; the promotion happens only when the API server holds
// the incarnation the status records, current. The cache shows dev's BindingPolicy current (the incarnation
// the status records) and dev has soaked: the pass promotes only when the API server agrees.
// Otherwise it writes nothing and emits nothing, and requeues with no error.
func TestPromotionRechecksTheAPIServer(t *testing.T) {
	cases := map[string]struct {
		change   func(f *fixture)
		promotes bool
	}{
		"the API server agrees":                    {change: func(*fixture) {}, promotes: true},
		"re-created with another UID":              {change: func(f *fixture) { f.recreate(devBP, "dev-uid-b") }},
		"deleted":                                  {change: func(f *fixture) { f.remove(f.storedBindingPolicy(devBP), f.storedBinding(devBP)) }},
		"its Binding made for another incarnation": {change: func(f *fixture) { f.bind(devBP, "dev-uid-b", "dev-1") }},
		"API server not answering": {change: func(f *fixture) {
			f.failNext("live-get BindingPolicy", apierrors.NewTimeoutError("request timed out", 1))
		}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t)
			f.readyToPromote()
			f.holdInCache(f.storedBindingPolicy(devBP), f.storedBinding(devBP))
			before := f.stages()
			tc.change(f)
			if tc.promotes {
				f.check(promoted)
				return
			}
			f.check(passOutcome{Result: requeueOnConflict})
			if diff := cmp.Diff(before, f.stages()); diff != "" {
				t.Errorf("the stages moved without the API server's agreement (-before +after):\n%s", diff)
			}
		})
	}
}

// TestCreateFindsTheNameTaken: a create that finds its name taken (the cache has not seen the BindingPolicy
// yet) reads the BindingPolicy from the API server and settles it in the same pass: one of the policy's as
// desired is left alone, one of the policy's with another spec is brought back to the stage's, the stager's
// is adopted and someone else's is left alone. One write at most, with its event.
func TestCreateFindsTheNameTaken(t *testing.T) {
	desired := stager.DesiredBindingPolicy(testPolicy(), 0)
	activated := []string{communityv1alpha1.ReasonStageActivated}
	cases := map[string]struct {
		existing *controlv1alpha1.BindingPolicy
		patched  bool
		events   []string
	}{
		"the policy's, as desired": {existing: desired, events: activated},
		"the policy's, another spec": {existing: testutil.WrapBindingPolicy(desired).ClusterSelectors(testutil.MatchLabels("env", "prod")).Obj(),
			patched: true, events: append(activated, communityv1alpha1.ReasonBindingPolicyUpdated)},
		"the stager's": {existing: testutil.WrapBindingPolicy(desired).OwnedBy(testSBP, testSBPUID).Obj(),
			patched: true, events: append(activated, communityv1alpha1.ReasonBindingPolicyAdopted)},
		"someone else's": {existing: testutil.MakeBindingPolicy(devBP).Obj(), events: activated},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t)
			existing := testutil.WrapBindingPolicy(tc.existing).UID("dev-uid-existing").Obj()
			f.must(f.api.Create(context.Background(), existing))
			f.hideFromCache(existing)
			writes := map[string]int{statusUpdate: 1, bpCreate: 1}
			want := existing
			if tc.patched {
				writes["patch BindingPolicy"] = 1
				want = stager.MergeDesired(existing, desired)
			}
			f.check(passOutcome{Writes: writes, Events: tc.events})
			got := f.storedBindingPolicy(devBP)
			if diff := cmp.Diff(want, got, cmpopts.IgnoreFields(metav1.ObjectMeta{}, "ResourceVersion"), cmpopts.IgnoreTypes(metav1.TypeMeta{})); diff != "" {
				t.Errorf("stored BindingPolicy (-want +got):\n%s", diff)
			}
		})
	}
}

// TestAnnotationRemovalThenStatus: a pass that consumes an annotation (a retry naming no halted stage) and
// changes the status removes the annotation, then writes the status with the resourceVersion the removal
// left: the write does not conflict with drover's own patch, and the pass's events are emitted.
func TestAnnotationRemovalThenStatus(t *testing.T) {
	f := newFixture(t)
	f.check(passOutcome{Writes: map[string]int{statusUpdate: 1, bpCreate: 1},
		Events: []string{communityv1alpha1.ReasonStageActivated, communityv1alpha1.ReasonBindingPolicyCreated}})
	sbp := f.storedSBP()
	sbp.Annotations = map[string]string{communityv1alpha1.AnnotationRetryStage: "dev"}
	f.must(f.api.Update(context.Background(), sbp))
	f.process() // dev's Binding: the next pass's status changes (dev soaks), without a commit
	f.check(passOutcome{Result: ctrl.Result{RequeueAfter: time.Minute},
		Writes: map[string]int{"patch StagedBindingPolicy": 1, statusUpdate: 1},
		Events: []string{communityv1alpha1.ReasonRetryIgnored, communityv1alpha1.ReasonSoaking}})
	if _, ok := f.storedSBP().Annotations[communityv1alpha1.AnnotationRetryStage]; ok {
		t.Error("the retry annotation was not removed")
	}
}
