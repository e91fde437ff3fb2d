package integration

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	communityv1alpha1 "github.com/drover-dev/drover/api/kubestellar/community/v1alpha1"
)

// restartManager stops the suite's manager and starts a new one, as a restart or a failover would: the new
// one has nothing in memory but what it reads.
func restartManager() {
	stopManager()
	startManager()
}

// stopManager stops the suite's manager; the spec must call startManager again.
func stopManager() {
	cancelMgr()
	Eventually(mgrDone, time.Minute).Should(Receive(BeNil()))
}

// A new manager continues a rollout from the committed status and the live objects, whatever moment the
// previous one stopped at, with no transition made twice.
var _ = Describe("StagedBindingPolicy across a manager restart", func() {
	ctx := context.Background()
	var w sbpWorld
	var agg, dev string
	BeforeEach(func() {
		w = newSBPWorld(ctx)
		agg = w.aggregator(ctx)
		dev = w.cluster(ctx, "dev", "dev")
		w.cluster(ctx, "prod", "prod")
		w.deployment(ctx, "web")
	})
	twoStages := func() *communityv1alpha1.StagedBindingPolicy {
		return w.policy(agg).
			Stage("dev", w.selector("dev")).Condition(reporting(agg, 1)).
			Stage("prod", w.selector("prod")).RequireApproval().Obj()
	}

	It("creates the next stage's BindingPolicy after a stop between the commit and the create", func() {
		sbp := createSBP(ctx, twoStages())
		Eventually(sbpState(ctx, sbp.Name)).Should(Equal("dev/Progressing/" + communityv1alpha1.ReasonAwaitingStatus))
		devBP := getBindingPolicy(ctx, stageName(sbp.Name, "dev"))
		Expect(devBP).NotTo(BeNil())

		// The previous manager committed the promotion and stopped before creating prod's BindingPolicy: write
		// that status by hand while no manager runs.
		stopManager()
		committed := getSBP(ctx, sbp.Name)
		now := metav1.NewTime(time.Now().Truncate(time.Second))
		committed.Status.ActiveStage = "prod"
		committed.Status.ActiveStageIndex = new(int32(1))
		committed.Status.Stages = []communityv1alpha1.StageStatus{
			{Name: "dev", BindingPolicyName: devBP.Name, BindingPolicyUID: devBP.UID, Result: communityv1alpha1.StageSucceeded,
				StartedAt: &now, ClockStartedAt: &now, CompletedAt: &now},
			{Name: "prod", BindingPolicyName: stageName(sbp.Name, "prod"), Result: communityv1alpha1.StageActive,
				StartedAt: &now, ClockStartedAt: &now},
		}
		Expect(k8sClient.Status().Update(ctx, committed)).To(Succeed())
		activated := eventCount(ctx, sbp.Name, "StageActivated")()
		handover := watchHandover(ctx, sbp.Name, stageName(sbp.Name, "dev"), stageName(sbp.Name, "prod"))
		startManager()

		expectHandover(handover)
		Eventually(sbpState(ctx, sbp.Name)).Should(Equal("prod/Waiting/" + communityv1alpha1.ReasonAwaitingApproval))
		Expect(bindingPolicyNames(ctx, sbp.Name)()).To(Equal([]string{stageName(sbp.Name, "prod")}))
		Consistently(eventCount(ctx, sbp.Name, "StageActivated"), time.Second).Should(Equal(activated),
			"the new manager made the committed activation again")
		Expect(stageResult(ctx, sbp.Name, "dev")()).To(Equal(communityv1alpha1.StageSucceeded))
	})

	It("resumes a rollout at rest where it stood: the same stage and clock, no transition again", func() {
		sbp := createSBP(ctx, twoStages())
		Eventually(sbpState(ctx, sbp.Name)).Should(Equal("dev/Progressing/" + communityv1alpha1.ReasonAwaitingStatus))
		w.reported(dev, "web")
		Eventually(sbpState(ctx, sbp.Name)).Should(Equal("prod/Waiting/" + communityv1alpha1.ReasonAwaitingApproval))
		clock := clockOf(ctx, sbp.Name, "prod")()
		succeeded, activated := eventCount(ctx, sbp.Name, "StageSucceeded")(), eventCount(ctx, sbp.Name, "StageActivated")()

		restartManager()
		// Nothing to redo: the same stage, the same clock, no second transition; the approval still promotes.
		Consistently(sbpState(ctx, sbp.Name), time.Second).Should(Equal("prod/Waiting/" + communityv1alpha1.ReasonAwaitingApproval))
		Expect(clockOf(ctx, sbp.Name, "prod")()).To(Equal(clock))
		annotateSBP(ctx, sbp.Name, communityv1alpha1.AnnotationApproveStage, "prod")
		Eventually(sbpState(ctx, sbp.Name)).Should(HavePrefix("prod/Completed"))
		Expect(eventCount(ctx, sbp.Name, "StageSucceeded")()).To(Equal(succeeded))
		Expect(eventCount(ctx, sbp.Name, "StageActivated")()).To(Equal(activated))
		Expect(bindingPolicyNames(ctx, sbp.Name)()).To(Equal([]string{stageName(sbp.Name, "prod")}))
	})
})
