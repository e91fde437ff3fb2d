package e2e

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	communityv1alpha1 "github.com/drover-dev/drover/api/kubestellar/community/v1alpha1"
	controlv1alpha1 "github.com/drover-dev/drover/api/kubestellar/control/v1alpha1"
	"github.com/drover-dev/drover/internal/preview"
	"github.com/drover-dev/drover/internal/stagedbindingpolicy"
)

// withoutSBP is the manager's --controllers with every controller but the StagedBindingPolicy one: drover
// not yet (or no longer) running StagedBindingPolicies, its webhook admitting them unchanged.
const withoutSBP = "--controllers=nodepool,yurtappdaemon,uniteddaemonset,tapp,persistentpodstate"

// The move from the KubeStellar workload stager (docs/migrate/kubestellar-stager.md), on the state the
// stager leaves mid-rollout: a two-stage policy whose status says only activeStage=two, the BindingPolicy
// <sbp>.stage.two as the stager creates it (a plain owner reference, no labels), and what KubeStellar (kssim)
// made of it. drover adopts that BindingPolicy, creates none for stage one, finishes the rollout at stage
// two; the guide's rollback gives the BindingPolicy the stager's shape back. No object changes its UID.
var _ = Describe("Moving from the KubeStellar workload stager", Ordered, func() {
	var f *sbpFixture
	var sbp *communityv1alpha1.StagedBindingPolicy
	var bpName string
	var bpUID, bindingUID types.UID
	var rec *bpRecorder

	// Everything is made here, not in an It: what an It defers is cleaned up when that It ends.
	BeforeAll(func() {
		Expect(cluster.RestartManager(suiteCtx, withoutSBP)).To(Succeed())
		DeferCleanup(func() { Expect(cluster.RestartManager(suiteCtx)).To(Succeed()) })
		f = newSBPFixture("e2e-move-sbp", map[string]map[string]string{"a": {"tier": "one"}, "b": {"tier": "two"}})
		sbp = f.createSBP("", f.stage("one", "one", f.available(1)), f.stage("two", "two", f.available(1)))
		bpName = sbp.Name + ".stage.two"
		rec = recordBindingPolicies(sbp.Name) // before drover labels any BindingPolicy of the policy

		By("writing the status as the stager does: activeStage only, through the status subresource")
		sbp.Status = communityv1alpha1.StagedBindingPolicyStatus{ActiveStage: "two"}
		Expect(k8sClient.Status().Update(suiteCtx, sbp)).To(Succeed())

		By("creating stage two's BindingPolicy as the stager does")
		bp := &controlv1alpha1.BindingPolicy{
			ObjectMeta: metav1.ObjectMeta{Name: bpName, OwnerReferences: []metav1.OwnerReference{{
				APIVersion: communityv1alpha1.GroupVersion.String(), Kind: "StagedBindingPolicy", Name: sbp.Name, UID: sbp.UID}}},
			Spec: controlv1alpha1.BindingPolicySpec{Downsync: sbp.Spec.Downsync, ClusterSelectors: sbp.Spec.Stages[1].ClusterSelectors},
		}
		createWithCleanup(bp)
		bpUID = bp.UID
	})

	It("starts from the state the stager leaves at its second stage, as KubeStellar processed it", func() {
		By("letting KubeStellar make its Binding and the Deployment's CombinedStatus")
		Eventually(func(g Gomega) {
			got := getBindingPolicy(g, bpName)
			g.Expect(got.Finalizers).To(ContainElement(controlv1alpha1.FinalizerBindingPolicy))
			g.Expect(got.Status.ObservedGeneration).To(Equal(got.Generation))
			b := getBinding(g, bpName)
			owner := metav1.GetControllerOf(b)
			g.Expect(owner).NotTo(BeNil())
			g.Expect(owner.UID).To(Equal(bpUID))
			g.Expect(b.Spec.Destinations).To(ConsistOf(controlv1alpha1.Destination{ClusterID: f.cluster("b")}))
			bindingUID = b.UID
			var statuses controlv1alpha1.CombinedStatusList
			g.Expect(k8sClient.List(suiteCtx, &statuses, client.InNamespace(f.id),
				client.MatchingLabels{controlv1alpha1.LabelCombinedStatusBindingPolicy: bpName})).To(Succeed())
			g.Expect(statuses.Items).NotTo(BeEmpty())
		}).WithTimeout(sbpTimeout).WithPolling(interval).Should(Succeed())
	})

	It("previews the switch: the BindingPolicy adopted, nothing created or deleted", func() {
		reports, err := stagedbindingpolicy.Preview(suiteCtx, k8sClient, time.Now())
		Expect(err).NotTo(HaveOccurred())
		var mine *preview.Report
		for i := range reports {
			if reports[i].Owner == "StagedBindingPolicy "+sbp.Name {
				mine = &reports[i]
			}
		}
		Expect(mine).NotTo(BeNil(), "%+v", reports)
		Expect(mine.Restarting()).To(BeEmpty(), "%+v", mine)
		effects := map[string]preview.Effect{}
		for _, it := range mine.Items {
			effects[it.Object] = it.Effect
		}
		Expect(effects).To(Equal(map[string]preview.Effect{"status": preview.Status, "BindingPolicy " + bpName: preview.Adopt}), "%+v", mine)
	})

	It("switches to drover: the BindingPolicy adopted, the rollout finished at stage two", func() {
		Expect(cluster.RestartManager(suiteCtx)).To(Succeed())
		done := eventuallyPhase(sbp.Name, communityv1alpha1.PhaseCompleted, "two")
		expectCompleted(done, "one", "two")
		Expect(done.Status.Stages[0].Message).To(Equal("promoted before drover took over the rollout"))
		Expect(done.Status.Stages[1].BindingPolicyUID).To(Equal(bpUID))
		bp := getBindingPolicy(Default, bpName)
		expectGenerated(bp, sbp, "two")
		Expect(bp.OwnerReferences).To(HaveLen(1))
		Expect(bp.Finalizers).To(ContainElement(controlv1alpha1.FinalizerBindingPolicy))
		Consistently(func(g Gomega) {
			g.Expect(getBindingPolicy(g, bpName).UID).To(Equal(bpUID))
			g.Expect(getBinding(g, bpName).UID).To(Equal(bindingUID))
			err := k8sClient.Get(suiteCtx, client.ObjectKey{Name: sbp.Name + ".stage.one"}, &controlv1alpha1.BindingPolicy{})
			g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "stage one's BindingPolicy: %v", err)
			g.Expect(incarnations(rec.snapshot(g))).To(Equal(map[string][]types.UID{bpName: {bpUID}}))
		}, "3s", interval).Should(Succeed())
		Eventually(func(g Gomega) map[string]int { return sbpEventCounts(g, sbp.UID) }).
			WithTimeout(sbpTimeout).WithPolling(interval).Should(And(
			HaveKeyWithValue(communityv1alpha1.ReasonBindingPolicyAdopted, 1), HaveKeyWithValue("RolloutCompleted/two", 1),
			Not(HaveKey(HavePrefix(communityv1alpha1.ReasonBindingPolicyCreated))), Not(HaveKey(HavePrefix(communityv1alpha1.ReasonStageActivated)))))
	})

	It("rolls back to the stager's shape with every object kept", func() {
		Expect(cluster.RestartManager(suiteCtx, withoutSBP)).To(Succeed())
		By("removing drover's labels and making the owner reference a plain one, as the guide's commands do")
		bp := getBindingPolicy(Default, bpName)
		patch := []byte(`[{"op":"test","path":"/metadata/ownerReferences/0/kind","value":"StagedBindingPolicy"},` +
			`{"op":"remove","path":"/metadata/ownerReferences/0/controller"},` +
			`{"op":"remove","path":"/metadata/ownerReferences/0/blockOwnerDeletion"},` +
			`{"op":"remove","path":"/metadata/labels/drover.dev~1staged-binding-policy"},` +
			`{"op":"remove","path":"/metadata/labels/drover.dev~1stage"},` +
			`{"op":"remove","path":"/metadata/labels/app.kubernetes.io~1managed-by"}]`)
		Expect(k8sClient.Patch(suiteCtx, bp, client.RawPatch(types.JSONPatchType, patch))).To(Succeed())
		By("writing the status as the stager's first status write leaves it")
		stored := getSBP(Default, sbp.Name)
		stored.Status = communityv1alpha1.StagedBindingPolicyStatus{ActiveStage: stored.Status.ActiveStage}
		Expect(k8sClient.Status().Update(suiteCtx, stored)).To(Succeed())

		Consistently(func(g Gomega) {
			got := getBindingPolicy(g, bpName)
			g.Expect(got.UID).To(Equal(bpUID))
			g.Expect(got.OwnerReferences).To(Equal([]metav1.OwnerReference{{APIVersion: communityv1alpha1.GroupVersion.String(),
				Kind: "StagedBindingPolicy", Name: sbp.Name, UID: sbp.UID}}))
			g.Expect(got.Labels).NotTo(HaveKey(HavePrefix("drover.dev/")))
			g.Expect(got.Finalizers).To(ContainElement(controlv1alpha1.FinalizerBindingPolicy))
			g.Expect(getBinding(g, bpName).UID).To(Equal(bindingUID))
			s := getSBP(g, sbp.Name)
			g.Expect(s.UID).To(Equal(sbp.UID))
			g.Expect(s.Status).To(Equal(communityv1alpha1.StagedBindingPolicyStatus{ActiveStage: "two"}), "drover no longer writes it")
		}, "3s", interval).Should(Succeed())
	})
})

// getBindingPolicy reads a BindingPolicy.
func getBindingPolicy(g Gomega, name string) *controlv1alpha1.BindingPolicy {
	bp := &controlv1alpha1.BindingPolicy{}
	g.Expect(k8sClient.Get(suiteCtx, client.ObjectKey{Name: name}, bp)).To(Succeed())
	return bp
}

// getBinding reads a Binding.
func getBinding(g Gomega, name string) *controlv1alpha1.Binding {
	b := &controlv1alpha1.Binding{}
	g.Expect(k8sClient.Get(suiteCtx, client.ObjectKey{Name: name}, b)).To(Succeed())
	return b
}
