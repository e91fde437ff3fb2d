package integration

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	communityv1alpha1 "github.com/drover-dev/drover/api/kubestellar/community/v1alpha1"
	controlv1alpha1 "github.com/drover-dev/drover/api/kubestellar/control/v1alpha1"
	"github.com/drover-dev/drover/internal/scheme"
	"github.com/drover-dev/drover/internal/testutil"
)

// More helpers for the StagedBindingPolicy specs: building, creating and editing a spec's policy, reading
// its history, and writing CombinedStatuses by hand.

// holdFinalizer keeps a hand-written CombinedStatus visible: kssim, like KubeStellar, deletes a
// CombinedStatus of a Binding's object that it did not write, and the finalizer leaves it in place
// (terminating) for as long as a spec looks at it.
const holdFinalizer = "test.drover.dev/hold"

// policy starts the spec's StagedBindingPolicy, named after its namespace (unique in the suite), placing
// the spec's Deployments with the collectors given.
func (w sbpWorld) policy(collectors ...string) *testutil.SBPWrapper {
	return testutil.MakeSBP(w.ns).Downsync(w.workload(collectors...))
}

// reported makes a cluster report one available replica of one of the spec's Deployments.
func (w sbpWorld) reported(cluster, deployment string) {
	w.report(cluster, deployment, map[string]any{"availableReplicas": int64(1)})
}

// reporting is a condition over the spec's aggregator: at least n clusters reported.
func reporting(agg string, n int) string {
	return fmt.Sprintf("results['%s'][0].count >= %d.0", agg, n)
}

// createSBP creates a policy (the API server sets its generation) and deletes it, with its
// BindingPolicies, when the spec ends: envtest has no garbage collector, and kssim would otherwise keep
// working for the policies of finished specs.
func createSBP(ctx context.Context, sbp *communityv1alpha1.StagedBindingPolicy) *communityv1alpha1.StagedBindingPolicy {
	sbp = sbp.DeepCopy()
	sbp.Generation = 0
	Expect(k8sClient.Create(ctx, sbp)).To(Succeed())
	DeferCleanup(deleteSBP, sbp.Name)
	return sbp
}

// deleteSBP deletes a policy, then the BindingPolicies labelled with its name, as garbage collection would.
func deleteSBP(ctx SpecContext, name string) {
	sbp := &communityv1alpha1.StagedBindingPolicy{}
	sbp.Name = name
	Expect(client.IgnoreNotFound(k8sClient.Delete(ctx, sbp))).To(Succeed())
	Eventually(func() bool {
		return apierrors.IsNotFound(k8sClient.Get(ctx, client.ObjectKey{Name: name}, sbp))
	}).Should(BeTrue())
	list := &controlv1alpha1.BindingPolicyList{}
	Expect(k8sClient.List(ctx, list, client.MatchingLabels{communityv1alpha1.LabelStagedBindingPolicy: name})).To(Succeed())
	for i := range list.Items {
		Expect(client.IgnoreNotFound(k8sClient.Delete(ctx, &list.Items[i]))).To(Succeed())
	}
}

// editSBP applies edit to the stored policy and updates it, again on a conflict (the controller writes
// the status meanwhile); any other error, such as a refusal by the webhook, fails at once.
func editSBP(ctx context.Context, name string, edit func(*communityv1alpha1.StagedBindingPolicy)) {
	Eventually(func(g Gomega) {
		sbp := &communityv1alpha1.StagedBindingPolicy{}
		g.Expect(k8sClient.Get(ctx, client.ObjectKey{Name: name}, sbp)).To(Succeed())
		edit(sbp)
		err := k8sClient.Update(ctx, sbp)
		if err != nil && !apierrors.IsConflict(err) {
			StopTrying("updating StagedBindingPolicy " + name).Wrap(err).Now()
		}
		g.Expect(err).NotTo(HaveOccurred())
	}).Should(Succeed())
}

// annotateSBP sets an annotation of the policy with a merge patch, as kubectl annotate --overwrite does.
func annotateSBP(ctx context.Context, name, key, value string) {
	body, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{key: value}}})
	Expect(err).NotTo(HaveOccurred())
	sbp := &communityv1alpha1.StagedBindingPolicy{}
	sbp.Name = name
	Expect(k8sClient.Patch(ctx, sbp, client.RawPatch(types.MergePatchType, body))).To(Succeed())
}

// sbpAnnotations reads the policy's annotations.
func sbpAnnotations(ctx context.Context, name string) func() map[string]string {
	return func() map[string]string { return getSBP(ctx, name).Annotations }
}

// sbpState is the policy's active stage, phase and Progressing reason: "dev/Waiting/NoDestinations".
func sbpState(ctx context.Context, name string) func() string {
	return func() string {
		sbp := &communityv1alpha1.StagedBindingPolicy{}
		if err := k8sClient.Get(ctx, client.ObjectKey{Name: name}, sbp); err != nil {
			return err.Error()
		}
		reason := ""
		if c := meta.FindStatusCondition(sbp.Status.Conditions, communityv1alpha1.ConditionProgressing); c != nil {
			reason = c.Reason
		}
		return sbp.Status.ActiveStage + "/" + string(sbp.Status.Phase) + "/" + reason
	}
}

// stageEntry returns a copy of the history entry of a stage (the one not superseded if there are two),
// or nil.
func stageEntry(ctx context.Context, name, stage string) *communityv1alpha1.StageStatus {
	var found *communityv1alpha1.StageStatus
	for _, e := range getSBP(ctx, name).Status.Stages {
		if e.Name == stage && (found == nil || e.Result != communityv1alpha1.StageSuperseded) {
			found = e.DeepCopy()
		}
	}
	return found
}

// stageResult follows the result of a stage's history entry ("" without one).
func stageResult(ctx context.Context, name, stage string) func() communityv1alpha1.StageResult {
	return func() communityv1alpha1.StageResult {
		if e := stageEntry(ctx, name, stage); e != nil {
			return e.Result
		}
		return ""
	}
}

// clockOf follows a stage's clockStartedAt (zero without one).
func clockOf(ctx context.Context, name, stage string) func() time.Time {
	return func() time.Time {
		if e := stageEntry(ctx, name, stage); e != nil && e.ClockStartedAt != nil {
			return e.ClockStartedAt.Time
		}
		return time.Time{}
	}
}

// waitPastSecond returns once the wall clock is a whole second past t. The times of the status have a
// resolution of one second, so a spec that wants to see a clock restart must not edit within the second
// the clock started in.
func waitPastSecond(t time.Time) {
	Eventually(time.Now).Should(BeTemporally(">=", t.Add(time.Second)))
}

// eventCount follows how many events of a reason were raised about the policy.
func eventCount(ctx context.Context, name, reason string) func() int {
	return func() int { return count(sbpEvents(ctx, name)(), reason) }
}

// isCurrent reports whether KubeStellar (kssim) has processed the BindingPolicy's latest generation.
func isCurrent(bp *controlv1alpha1.BindingPolicy) bool {
	return bp != nil && bp.DeletionTimestamp == nil && bp.Status.ObservedGeneration >= bp.Generation
}

// deploymentUID reads the UID of one of the spec's Deployments.
func (w sbpWorld) deploymentUID(ctx context.Context, name string) types.UID {
	d := &appsv1.Deployment{}
	Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: w.ns, Name: name}, d)).To(Succeed())
	return d.UID
}

// holdCombinedStatus creates, by hand, a CombinedStatus of one of the spec's Deployments labelled with the
// BindingPolicy bpName but named after the BindingPolicy UID bpUID, whose aggregator row reads count and
// available as given. It carries holdFinalizer, removed when the spec ends.
func (w sbpWorld) holdCombinedStatus(ctx context.Context, deployment, bpName string, bpUID types.UID, agg, count, available string) {
	cs := testutil.MakeCombinedStatus(w.deploymentUID(ctx, deployment), bpName, bpUID).
		Workload("apps/v1", "Deployment", "deployments", w.ns, deployment).
		Result(agg, []string{"count", "available"}, []controlv1alpha1.Value{testutil.NumberValue(count), testutil.NumberValue(available)}).
		Typed()
	cs.UID, cs.ResourceVersion, cs.Generation = "", "", 0
	cs.Finalizers = []string{holdFinalizer}
	Expect(k8sClient.Create(ctx, cs)).To(Succeed())
	DeferCleanup(func(ctx SpecContext) {
		Eventually(func(g Gomega) {
			held := &controlv1alpha1.CombinedStatus{}
			err := k8sClient.Get(ctx, client.ObjectKeyFromObject(cs), held)
			if apierrors.IsNotFound(err) {
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			held.Finalizers = nil
			g.Expect(client.IgnoreNotFound(k8sClient.Update(ctx, held))).To(Succeed())
		}).Should(Succeed())
	})
}

// watchHandover follows the policy's BindingPolicies from now on, in the order the API server wrote them,
// and sends once, when the BindingPolicy from starts to leave (its deletion requested, or gone), an error
// unless to was current at that point (KubeStellar had processed its latest generation). Polling could miss
// the moment; the watch cannot.
func watchHandover(ctx context.Context, sbp, from, to string) <-chan error {
	ctx, cancel := context.WithCancel(ctx)
	DeferCleanup(cancel)
	wc, err := client.NewWithWatch(cfg, client.Options{Scheme: scheme.New()})
	Expect(err).NotTo(HaveOccurred())
	labels := client.MatchingLabels{communityv1alpha1.LabelStagedBindingPolicy: sbp}
	list := &controlv1alpha1.BindingPolicyList{}
	Expect(wc.List(ctx, list, labels)).To(Succeed())
	current := false
	for i := range list.Items {
		if list.Items[i].Name == to {
			current = isCurrent(&list.Items[i])
		}
	}
	w, err := wc.Watch(ctx, &controlv1alpha1.BindingPolicyList{}, labels,
		&client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: list.ResourceVersion}})
	Expect(err).NotTo(HaveOccurred())
	out := make(chan error, 1)
	go func() {
		defer GinkgoRecover()
		defer w.Stop()
		for ev := range w.ResultChan() {
			bp, ok := ev.Object.(*controlv1alpha1.BindingPolicy)
			if !ok {
				continue
			}
			switch {
			case bp.Name == to:
				current = ev.Type != watch.Deleted && isCurrent(bp)
			case bp.Name == from && (ev.Type == watch.Deleted || bp.DeletionTimestamp != nil):
				if !current {
					out <- fmt.Errorf("BindingPolicy %s started to leave before %s was current", from, to)
					return
				}
				out <- nil
				return
			}
		}
		out <- errors.New("the watch of BindingPolicies ended before " + from + " left")
	}()
	return out
}

// expectHandover waits for the verdict of watchHandover.
func expectHandover(handover <-chan error) {
	var err error
	Eventually(handover).Should(Receive(&err))
	Expect(err).NotTo(HaveOccurred())
}
