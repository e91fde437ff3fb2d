package integration

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	communityv1alpha1 "github.com/drover-dev/drover/api/kubestellar/community/v1alpha1"
	"github.com/drover-dev/drover/internal/stagedbindingpolicy/stager"
	"github.com/drover-dev/drover/internal/testutil"
)

// Whose BindingPolicy it is: someone else's with the name a stage wants is never touched; one the
// upstream stager left (a plain owner reference to the policy) is adopted. And a StatusCollector that does
// not exist is reported in KubeStellar's words.
var _ = Describe("StagedBindingPolicy, conflicts and adoption", func() {
	ctx := context.Background()

	It("never modifies or deletes a foreign BindingPolicy with a stage's name, and waits with Conflict", func() {
		w := newSBPWorld(ctx)
		agg := w.aggregator(ctx)
		w.cluster(ctx, "dev-1", "dev")
		w.deployment(ctx, "web")
		name := w.ns
		foreign := testutil.MakeBindingPolicy(stageName(name, "dev")).
			Downsync(w.workload()).ClusterSelectors(w.selector("elsewhere")).Obj()
		foreign.Generation = 0
		Expect(k8sClient.Create(ctx, foreign)).To(Succeed())
		DeferCleanup(func(ctx SpecContext) {
			Expect(client.IgnoreNotFound(k8sClient.Delete(ctx, foreign))).To(Succeed())
		})
		// kssim adds its finalizer and status: wait for that, so that what follows compares drover's doing only.
		Eventually(func() bool { return isCurrent(getBindingPolicy(ctx, foreign.Name)) }).Should(BeTrue())
		foreign = getBindingPolicy(ctx, foreign.Name)

		sbp := createSBP(ctx, w.policy(agg).Stage("dev", w.selector("dev")).Obj())
		Eventually(sbpState(ctx, sbp.Name)).Should(Equal("dev/Waiting/" + communityv1alpha1.ReasonConflict))
		Expect(sbpCondition(ctx, sbp.Name, communityv1alpha1.ConditionBindingPolicyReady)()).To(Equal("False/" + communityv1alpha1.ReasonConflict))
		Eventually(eventCount(ctx, sbp.Name, "Conflict")).Should(Equal(1))
		Consistently(func(g Gomega) {
			bp := getBindingPolicy(ctx, foreign.Name)
			g.Expect(bp).NotTo(BeNil())
			g.Expect(bp.UID).To(Equal(foreign.UID))
			g.Expect(bp.DeletionTimestamp).To(BeNil())
			g.Expect(bp.Generation).To(Equal(foreign.Generation))
			g.Expect(bp.Spec).To(Equal(foreign.Spec))
			g.Expect(bp.Labels).To(Equal(foreign.Labels))
			g.Expect(bp.OwnerReferences).To(BeEmpty())
			g.Expect(sbpState(ctx, sbp.Name)()).To(Equal("dev/Waiting/" + communityv1alpha1.ReasonConflict))
		}, 1500*time.Millisecond).Should(Succeed())

		// Once the name is free, drover makes its own.
		Expect(k8sClient.Delete(ctx, foreign)).To(Succeed())
		Eventually(func(g Gomega) {
			bp := getBindingPolicy(ctx, foreign.Name)
			g.Expect(bp).NotTo(BeNil())
			g.Expect(metav1.IsControlledBy(bp, getSBP(ctx, sbp.Name))).To(BeTrue())
		}).Should(Succeed())
		Eventually(sbpProgress(ctx, sbp.Name)).Should(Equal("dev/Completed"))
	})

	It("adopts a BindingPolicy the upstream stager left, keeping its UID", func() {
		w := newSBPWorld(ctx)
		agg := w.aggregator(ctx)
		w.cluster(ctx, "dev-1", "dev")
		w.deployment(ctx, "web")
		sbp := createSBP(ctx, w.policy(agg).Stage("dev", w.selector("dev")).Paused(true).Obj())
		Eventually(sbpProgress(ctx, sbp.Name)).Should(Equal("dev/Paused"))
		sbp = getSBP(ctx, sbp.Name)

		// The stager's shape: an owner reference to the policy that is not a controller reference, no labels.
		upstream := testutil.WrapBindingPolicy(stager.DesiredBindingPolicy(sbp, 0)).OwnedBy(sbp.Name, sbp.UID).Obj()
		upstream.Labels, upstream.Generation = nil, 0
		Expect(k8sClient.Create(ctx, upstream)).To(Succeed())
		uid := upstream.UID
		Consistently(func() []metav1.OwnerReference { return getBindingPolicy(ctx, upstream.Name).OwnerReferences },
			500*time.Millisecond).Should(HaveExactElements(HaveField("Controller", BeNil())), "nothing is written while paused")

		editSBP(ctx, sbp.Name, func(s *communityv1alpha1.StagedBindingPolicy) { s.Spec.Paused = false })
		Eventually(func(g Gomega) {
			bp := getBindingPolicy(ctx, upstream.Name)
			g.Expect(bp.UID).To(Equal(uid))
			g.Expect(bp.OwnerReferences).To(HaveExactElements(And(
				HaveField("UID", sbp.UID), HaveField("Controller", ptr.To(true)), HaveField("BlockOwnerDeletion", ptr.To(true)))))
			g.Expect(bp.Labels).To(HaveKeyWithValue(communityv1alpha1.LabelStagedBindingPolicy, sbp.Name))
			g.Expect(bp.Labels).To(HaveKeyWithValue(communityv1alpha1.LabelStage, "dev"))
			g.Expect(bp.Labels).To(HaveKeyWithValue(communityv1alpha1.LabelManagedBy, communityv1alpha1.ManagedByValue))
		}).Should(Succeed())
		Eventually(eventCount(ctx, sbp.Name, "BindingPolicyAdopted")).Should(Equal(1))
		Eventually(sbpProgress(ctx, sbp.Name)).Should(Equal("dev/Completed"))
		Expect(stageEntry(ctx, sbp.Name, "dev").BindingPolicyUID).To(Equal(uid))
		Expect(eventCount(ctx, sbp.Name, "BindingPolicyCreated")()).To(BeZero())
	})

	It("waits with StatusCollectorsMissing while the downsync names a collector that does not exist", func() {
		w := newSBPWorld(ctx)
		w.cluster(ctx, "dev-1", "dev")
		w.deployment(ctx, "web")
		sbp := createSBP(ctx, w.policy(w.ns+"-agg").Stage("dev", w.selector("dev")).Obj())

		Eventually(sbpState(ctx, sbp.Name)).Should(Equal("dev/Waiting/" + communityv1alpha1.ReasonStatusCollectorsMissing))
		Expect(sbpCondition(ctx, sbp.Name, communityv1alpha1.ConditionBindingPolicyReady)()).
			To(Equal("False/" + communityv1alpha1.ReasonStatusCollectorsMissing))
		Expect(getSBP(ctx, sbp.Name).Status.Conditions).To(ContainElement(And(
			HaveField("Type", communityv1alpha1.ConditionProgressing), HaveField("Message", ContainSubstring(w.ns+"-agg")))))
		Eventually(eventCount(ctx, sbp.Name, communityv1alpha1.ReasonStatusCollectorsMissing)).Should(Equal(1))
		Consistently(sbpState(ctx, sbp.Name), time.Second).Should(Equal("dev/Waiting/" + communityv1alpha1.ReasonStatusCollectorsMissing))

		// The collector appearing lets the stage pass.
		w.aggregator(ctx)
		Eventually(sbpProgress(ctx, sbp.Name)).Should(Equal("dev/Completed"))
	})
})
