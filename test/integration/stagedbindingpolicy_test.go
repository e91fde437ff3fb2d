package integration

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	communityv1alpha1 "github.com/drover-dev/drover/api/kubestellar/community/v1alpha1"
	controlv1alpha1 "github.com/drover-dev/drover/api/kubestellar/control/v1alpha1"
	"github.com/drover-dev/drover/internal/testutil"
)

// The stager's README example, applied verbatim, against kssim: the dev BindingPolicy first, prod once the
// condition over the dev Deployment's CombinedStatus holds, Completed once prod reports.
var _ = Describe("StagedBindingPolicy, the stager's example", Ordered, func() {
	const name = "nginx-staged-bindingpolicy"
	ctx := context.Background()
	var ns string

	BeforeAll(func() {
		n := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "sbp-seed-"}}
		Expect(k8sClient.Create(ctx, n)).To(Succeed())
		ns = n.Name
		for name, env := range map[string]string{"seed-dev": "dev", "seed-prod-1": "prod", "seed-prod-2": "prod"} {
			createManagedCluster(ctx, name, map[string]string{"env": env})
		}
		subject := controlv1alpha1.Expression("returned.status.availableReplicas")
		Expect(k8sClient.Create(ctx, &controlv1alpha1.StatusCollector{
			ObjectMeta: metav1.ObjectMeta{Name: "deployments-aggregator"},
			Spec: controlv1alpha1.StatusCollectorSpec{CombinedFields: []controlv1alpha1.NamedAggregator{
				{Name: "count", Type: controlv1alpha1.AggregatorTypeCount},
				{Name: "available", Type: controlv1alpha1.AggregatorTypeSum, Subject: &subject},
			}, Limit: 20},
		})).To(Succeed())
		createDeployment(ctx, ns, "nginx", map[string]string{"app.kubernetes.io/name": "nginx"})
	})

	It("applies verbatim and places dev first, with drover's labels and controller reference", func() {
		sbp, err := testutil.SeedSBP()
		Expect(err).NotTo(HaveOccurred())
		sbp.Generation = 0
		Expect(k8sClient.Create(ctx, sbp)).To(Succeed())

		Eventually(sbpProgress(ctx, name)).Should(Equal("dev/Progressing"))
		Eventually(bindingPolicyNames(ctx, name)).Should(Equal([]string{stageName(name, "dev")}))
		bp := getBindingPolicy(ctx, stageName(name, "dev"))
		Expect(bp.Labels).To(HaveKeyWithValue(communityv1alpha1.LabelStagedBindingPolicy, name))
		Expect(bp.Labels).To(HaveKeyWithValue(communityv1alpha1.LabelStage, "dev"))
		Expect(bp.Spec.ClusterSelectors).To(Equal([]metav1.LabelSelector{{MatchLabels: map[string]string{"env": "dev"}}}))
		Expect(bp.Spec.Downsync).To(Equal(getSBP(ctx, name).Spec.Downsync))
		ref := metav1.GetControllerOf(bp)
		Expect(ref).NotTo(BeNil())
		Expect(ref.UID).To(Equal(getSBP(ctx, name).UID))
		Expect(ref.BlockOwnerDeletion).To(Equal(ptr.To(true)))
	})

	It("does not promote while the condition is false", func() {
		// The dev cluster has not reported: as in KubeStellar, the aggregator has no row, only a row error
		// for seed-dev, and the stage waits for its report.
		Eventually(sbpCondition(ctx, name, communityv1alpha1.ConditionProgressing)).
			Should(Equal("True/" + communityv1alpha1.ReasonAwaitingStatus))
		Expect(stageEntry(ctx, name, "dev").LastEvaluation.AwaitingDestinations).To(Equal([]string{"seed-dev"}))
		Consistently(sbpProgress(ctx, name), 2*time.Second).Should(Equal("dev/Progressing"))
	})

	It("promotes to prod once the dev cluster reports, handing over create-before-delete", func() {
		// The handover is followed from a watch, in the API server's order: dev may start to leave only once
		// prod is current. Polling could miss the moment.
		handover := watchHandover(ctx, name, stageName(name, "dev"), stageName(name, "prod"))
		sbpWorld{ns: ns}.reported("seed-dev", "nginx")
		expectHandover(handover)
		Eventually(bindingPolicyNames(ctx, name)).Should(Equal([]string{stageName(name, "prod")}))
		sbp := getSBP(ctx, name)
		Expect(sbp.Status.Stages).To(HaveLen(2))
		Expect(sbp.Status.Stages[0].Result).To(Equal(communityv1alpha1.StageSucceeded))
	})

	It("completes once prod reports, keeping the prod BindingPolicy", func() {
		// prod has no condition: it passes once its Deployment has a CombinedStatus of the prod BindingPolicy.
		Eventually(sbpProgress(ctx, name)).Should(Equal("prod/Completed"))
		Expect(sbpCondition(ctx, name, communityv1alpha1.ConditionReady)()).To(Equal("True/" + communityv1alpha1.ReasonRolloutCompleted))
		Consistently(bindingPolicyNames(ctx, name), time.Second).Should(Equal([]string{stageName(name, "prod")}))
		Expect(eventCount(ctx, name, "StageActivated")()).To(Equal(2))
		Expect(eventCount(ctx, name, "StageSucceeded")()).To(Equal(1))
		Expect(eventCount(ctx, name, "RolloutCompleted")()).To(Equal(1))
	})

	It("makes no write at rest", func() {
		before := getSBP(ctx, name).ResourceVersion
		bp := getBindingPolicy(ctx, stageName(name, "prod")).ResourceVersion
		passes := reconcileTotal("stagedbindingpolicy")
		// Nudge the policy with an annotation: a pass runs and must find nothing to write.
		annotateSBP(ctx, name, "nudge", "1")
		nudged := getSBP(ctx, name).ResourceVersion
		Eventually(func() float64 { return reconcileTotal("stagedbindingpolicy") }).Should(BeNumerically(">", passes), "the nudge ran a pass")
		Consistently(func() string { return getSBP(ctx, name).ResourceVersion }, 2*time.Second).Should(Equal(nudged))
		Expect(nudged).NotTo(Equal(before), "the annotation itself is a write")
		Expect(getBindingPolicy(ctx, stageName(name, "prod")).ResourceVersion).To(Equal(bp))
	})

	It("forgets its metric series on delete (the e2e suite shows garbage collection of its BindingPolicies)", func() {
		phase := func() float64 {
			return metricSum("drover_sbp_phase", "sbp", name, func(m *dto.Metric) float64 { return m.GetGauge().GetValue() })
		}
		Expect(phase()).To(Equal(1.0), "the one-hot phase gauge of the live policy")
		sbp := getSBP(ctx, name)
		Expect(k8sClient.Delete(ctx, sbp)).To(Succeed())
		Eventually(func() bool {
			return apierrors.IsNotFound(k8sClient.Get(ctx, client.ObjectKey{Name: name}, &communityv1alpha1.StagedBindingPolicy{}))
		}).Should(BeTrue())
		Eventually(phase).Should(BeZero(), "the deleted policy's series are removed")
		// envtest has no garbage collector: the spec removes the BindingPolicy itself.
		Expect(k8sClient.Delete(ctx, getBindingPolicy(ctx, stageName(name, "prod")))).To(Succeed())
	})
})
