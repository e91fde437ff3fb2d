package integration

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/util/uuid"
	"sigs.k8s.io/controller-runtime/pkg/client"

	communityv1alpha1 "github.com/drover-dev/drover/api/kubestellar/community/v1alpha1"
	controlv1alpha1 "github.com/drover-dev/drover/api/kubestellar/control/v1alpha1"
)

// Which CombinedStatuses count: only those of the active stage's BindingPolicy, of the incarnation the
// status recorded. A CombinedStatus that only looks right must never promote.
var _ = Describe("StagedBindingPolicy, stale status", func() {
	ctx := context.Background()

	It("does not promote on a CombinedStatus with the right labels but another BindingPolicy UID in its name", func() {
		w := newSBPWorld(ctx)
		agg := w.aggregator(ctx)
		dev := w.cluster(ctx, "dev-1", "dev")
		w.cluster(ctx, "prod-1", "prod")
		w.deployment(ctx, "web")
		sbp := createSBP(ctx, w.policy(agg).
			Stage("dev", w.selector("dev")).Condition(reporting(agg, 1)).
			Stage("prod", w.selector("prod")).Obj())

		Eventually(sbpState(ctx, sbp.Name)).Should(Equal("dev/Progressing/" + communityv1alpha1.ReasonAwaitingStatus))
		devBP := stageName(sbp.Name, "dev")
		Expect(stageEntry(ctx, sbp.Name, "dev").BindingPolicyUID).To(Equal(getBindingPolicy(ctx, devBP).UID))

		// Every label of the dev BindingPolicy's CombinedStatus of web, and a row that meets the condition, but
		// the name of another incarnation. It is newer than the real one, which still has no row, only a row
		// error for dev-1 (of two CombinedStatuses that both counted, the newer would).
		real := &controlv1alpha1.CombinedStatus{}
		Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: w.ns,
			Name: controlv1alpha1.CombinedStatusName(w.deploymentUID(ctx, "web"), getBindingPolicy(ctx, devBP).UID)}, real)).To(Succeed())
		waitPastSecond(real.CreationTimestamp.Time)
		w.holdCombinedStatus(ctx, "web", devBP, uuid.NewUUID(), agg, "1", "1")
		Consistently(sbpState(ctx, sbp.Name), 2*time.Second).Should(Equal("dev/Progressing/" + communityv1alpha1.ReasonAwaitingStatus))
		Expect(stageEntry(ctx, sbp.Name, "dev").LastEvaluation.ObjectsSatisfied).To(BeZero())
		Expect(getBindingPolicy(ctx, stageName(sbp.Name, "prod"))).To(BeNil())

		// The real CombinedStatus meeting the condition promotes.
		w.reported(dev, "web")
		Eventually(sbpProgress(ctx, sbp.Name)).Should(Equal("prod/Completed"))
	})

	It("does not count a CombinedStatus of the previous stage for the next", func() {
		w := newSBPWorld(ctx)
		agg := w.aggregator(ctx)
		dev := w.cluster(ctx, "dev-1", "dev")
		prod := w.cluster(ctx, "prod-1", "prod")
		w.deployment(ctx, "web")
		// Cumulative: dev's BindingPolicy, and its CombinedStatus reading count 1, stay while prod is active.
		sbp := createSBP(ctx, w.policy(agg).Mode(communityv1alpha1.ModeCumulative).
			Stage("dev", w.selector("dev")).Condition(reporting(agg, 1)).
			Stage("prod", w.selector("prod")).Condition(reporting(agg, 1)).Obj())
		Eventually(sbpState(ctx, sbp.Name)).Should(Equal("dev/Progressing/" + communityv1alpha1.ReasonAwaitingStatus))
		w.reported(dev, "web")
		Eventually(sbpState(ctx, sbp.Name)).Should(Equal("prod/Progressing/" + communityv1alpha1.ReasonAwaitingStatus))
		Expect(bindingPolicyNames(ctx, sbp.Name)()).To(Equal([]string{stageName(sbp.Name, "dev"), stageName(sbp.Name, "prod")}))

		// dev's CombinedStatus of web stays, reading count 1: it must not count for prod.
		devUID := getBindingPolicy(ctx, stageName(sbp.Name, "dev")).UID
		devCS := &controlv1alpha1.CombinedStatus{}
		Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: w.ns, Name: controlv1alpha1.CombinedStatusName(w.deploymentUID(ctx, "web"), devUID)}, devCS)).To(Succeed())
		Expect(devCS.Results).To(HaveLen(1))
		Expect(devCS.Results[0].Rows[0].Columns[0].Number).To(HaveValue(Equal("1")))
		Consistently(sbpState(ctx, sbp.Name), 2*time.Second).Should(Equal("prod/Progressing/" + communityv1alpha1.ReasonAwaitingStatus))
		Expect(stageEntry(ctx, sbp.Name, "prod").LastEvaluation.ObjectsSatisfied).To(BeZero())

		w.reported(prod, "web")
		Eventually(sbpProgress(ctx, sbp.Name)).Should(Equal("prod/Completed"))
	})
})

// A stage without condition is promoted once it is placed and its objects have status; with no cluster to
// place on, it waits for one.
var _ = Describe("StagedBindingPolicy, a stage without condition", func() {
	ctx := context.Background()

	It("advances once its Binding and CombinedStatuses exist, though no cluster reported", func() {
		w := newSBPWorld(ctx)
		agg := w.aggregator(ctx)
		w.cluster(ctx, "dev-1", "dev")
		w.cluster(ctx, "prod-1", "prod")
		w.deployment(ctx, "web")
		sbp := createSBP(ctx, w.policy(agg).
			Stage("dev", w.selector("dev")).
			Stage("prod", w.selector("prod")).Condition(reporting(agg, 1)).Obj())

		Eventually(sbpState(ctx, sbp.Name)).Should(Equal("prod/Progressing/" + communityv1alpha1.ReasonAwaitingStatus))
		e := stageEntry(ctx, sbp.Name, "dev")
		Expect(e.Result).To(Equal(communityv1alpha1.StageSucceeded))
		Expect(e.Destinations).To(Equal(int32(1)))
		Expect(e.LastEvaluation.Objects).To(Equal(int32(1)))
		Expect(e.LastEvaluation.ObjectsWithStatus).To(Equal(int32(1)))
	})

	It("waits with NoDestinations while no cluster is selected, and advances once one joins", func() {
		w := newSBPWorld(ctx)
		agg := w.aggregator(ctx)
		spare := w.cluster(ctx, "spare", "spare")
		w.cluster(ctx, "prod-1", "prod")
		w.deployment(ctx, "web")
		sbp := createSBP(ctx, w.policy(agg).
			Stage("dev", w.selector("dev")).
			Stage("prod", w.selector("prod")).Condition(reporting(agg, 1)).Obj())

		Eventually(sbpState(ctx, sbp.Name)).Should(Equal("dev/Waiting/" + communityv1alpha1.ReasonNoDestinations))
		Eventually(eventCount(ctx, sbp.Name, communityv1alpha1.ReasonNoDestinations)).Should(Equal(1))
		Consistently(sbpState(ctx, sbp.Name), time.Second).Should(Equal("dev/Waiting/" + communityv1alpha1.ReasonNoDestinations))

		w.relabelCluster(ctx, spare, "dev")
		Eventually(sbpState(ctx, sbp.Name)).Should(Equal("prod/Progressing/" + communityv1alpha1.ReasonAwaitingStatus))
		Expect(stageEntry(ctx, sbp.Name, "dev").Destinations).To(Equal(int32(1)))
	})
})

// A cluster joining the active stage has not reported: KubeStellar evaluates it as a blank report, whose row
// fails with a row error, so the stage waits for its report, naming it.
var _ = Describe("StagedBindingPolicy, a cluster joining mid-stage", func() {
	ctx := context.Background()

	It("makes a coverage condition wait for the new cluster's report", func() {
		w := newSBPWorld(ctx)
		agg := w.aggregator(ctx)
		dev1 := w.cluster(ctx, "dev-1", "dev")
		w.cluster(ctx, "prod-1", "prod")
		w.deployment(ctx, "web")
		// Approval holds the stage once the condition is met, so that a cluster can join while it is active.
		sbp := createSBP(ctx, w.policy(agg).
			Stage("dev", w.selector("dev")).RequireApproval().
			Condition("results['"+agg+"'][0].count >= double(size(destinations))").
			Stage("prod", w.selector("prod")).Obj())

		w.reported(dev1, "web")
		Eventually(sbpState(ctx, sbp.Name)).Should(Equal("dev/Waiting/" + communityv1alpha1.ReasonAwaitingApproval))

		dev2 := w.cluster(ctx, "dev-2", "dev")
		Eventually(sbpState(ctx, sbp.Name)).Should(Equal("dev/Progressing/" + communityv1alpha1.ReasonAwaitingStatus))
		Expect(stageEntry(ctx, sbp.Name, "dev").Destinations).To(Equal(int32(2)))
		Expect(stageEntry(ctx, sbp.Name, "dev").LastEvaluation.AwaitingDestinations).To(Equal([]string{dev2}))
		annotateSBP(ctx, sbp.Name, communityv1alpha1.AnnotationApproveStage, "dev")
		Eventually(func() bool { return stageEntry(ctx, sbp.Name, "dev").ApprovedAt != nil }).Should(BeTrue())
		Consistently(sbpState(ctx, sbp.Name), time.Second).Should(Equal("dev/Progressing/" + communityv1alpha1.ReasonAwaitingStatus))

		w.reported(dev2, "web")
		Eventually(sbpProgress(ctx, sbp.Name)).Should(Equal("prod/Completed"))
	})
})
