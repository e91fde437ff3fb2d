package integration

import (
	"context"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	dto "github.com/prometheus/client_model/go"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	communityv1alpha1 "github.com/drover-dev/drover/api/kubestellar/community/v1alpha1"
)

// The gates besides the condition: pause, approval, soak, deadline and failure.
var _ = Describe("StagedBindingPolicy, gates", func() {
	ctx := context.Background()

	It("writes no BindingPolicy while paused, even with the gates holding, and restarts the clock on resume", func() {
		w := newSBPWorld(ctx)
		agg := w.aggregator(ctx)
		dev := w.cluster(ctx, "dev-1", "dev")
		w.cluster(ctx, "prod-1", "prod")
		w.deployment(ctx, "web")
		sbp := createSBP(ctx, w.policy(agg).
			Stage("dev", w.selector("dev")).Condition(reporting(agg, 1)).
			Stage("prod", w.selector("prod")).Obj())
		Eventually(sbpState(ctx, sbp.Name)).Should(Equal("dev/Progressing/" + communityv1alpha1.ReasonAwaitingStatus))
		clock := clockOf(ctx, sbp.Name, "dev")()

		editSBP(ctx, sbp.Name, func(s *communityv1alpha1.StagedBindingPolicy) { s.Spec.Paused = true })
		Eventually(sbpProgress(ctx, sbp.Name)).Should(Equal("dev/Paused"))
		Eventually(eventCount(ctx, sbp.Name, "RolloutPaused")).Should(Equal(1))
		// The condition now holds, and the pass sees it, but promotes nothing.
		w.reported(dev, "web")
		Eventually(func() communityv1alpha1.EvaluationOutcome {
			return stageEntry(ctx, sbp.Name, "dev").LastEvaluation.Outcome
		}).Should(Equal(communityv1alpha1.OutcomeSatisfied))
		Consistently(func(g Gomega) {
			g.Expect(sbpProgress(ctx, sbp.Name)()).To(Equal("dev/Paused"))
			g.Expect(getBindingPolicy(ctx, stageName(sbp.Name, "prod"))).To(BeNil())
		}, 2*time.Second).Should(Succeed())

		waitPastSecond(clock)
		editSBP(ctx, sbp.Name, func(s *communityv1alpha1.StagedBindingPolicy) { s.Spec.Paused = false })
		Eventually(eventCount(ctx, sbp.Name, "RolloutResumed")).Should(Equal(1))
		Eventually(sbpProgress(ctx, sbp.Name)).Should(Equal("prod/Completed"))
		Expect(stageEntry(ctx, sbp.Name, "dev").ClockStartedAt.Time).To(BeTemporally(">", clock))
	})

	It("waits for the approval annotation naming the stage, and removes it after the promotion", func() {
		w := newSBPWorld(ctx)
		agg := w.aggregator(ctx)
		w.cluster(ctx, "dev-1", "dev")
		w.cluster(ctx, "prod-1", "prod")
		w.deployment(ctx, "web")
		sbp := createSBP(ctx, w.policy(agg).
			Stage("dev", w.selector("dev")).RequireApproval().
			Stage("prod", w.selector("prod")).Condition(reporting(agg, 1)).Obj())
		Eventually(sbpState(ctx, sbp.Name)).Should(Equal("dev/Waiting/" + communityv1alpha1.ReasonAwaitingApproval))
		Eventually(eventCount(ctx, sbp.Name, communityv1alpha1.ReasonAwaitingApproval)).Should(Equal(1))
		// Approving another stage does not count.
		annotateSBP(ctx, sbp.Name, communityv1alpha1.AnnotationApproveStage, "prod")
		Consistently(sbpState(ctx, sbp.Name), time.Second).Should(Equal("dev/Waiting/" + communityv1alpha1.ReasonAwaitingApproval))

		annotateSBP(ctx, sbp.Name, communityv1alpha1.AnnotationApproveStage, "dev")
		Eventually(sbpState(ctx, sbp.Name)).Should(Equal("prod/Progressing/" + communityv1alpha1.ReasonAwaitingStatus))
		Eventually(sbpAnnotations(ctx, sbp.Name)).ShouldNot(HaveKey(communityv1alpha1.AnnotationApproveStage))
		Expect(stageEntry(ctx, sbp.Name, "dev").ApprovedAt).NotTo(BeNil())
		Eventually(eventCount(ctx, sbp.Name, "ApprovalAccepted")).Should(Equal(1))
	})

	It("soaks for minDuration from the stage's clock before promoting", func() {
		w := newSBPWorld(ctx)
		agg := w.aggregator(ctx)
		w.cluster(ctx, "dev-1", "dev")
		w.cluster(ctx, "prod-1", "prod")
		w.deployment(ctx, "web")
		sbp := createSBP(ctx, w.policy(agg).
			Stage("dev", w.selector("dev")).MinDuration(3*time.Second).
			Stage("prod", w.selector("prod")).Obj())
		Eventually(sbpState(ctx, sbp.Name)).Should(Equal("dev/Waiting/" + communityv1alpha1.ReasonSoaking))
		Eventually(eventCount(ctx, sbp.Name, communityv1alpha1.ReasonSoaking)).Should(Equal(1))

		// No resync: the timer of the soak's end makes the pass that promotes.
		Eventually(sbpProgress(ctx, sbp.Name), 10*time.Second).Should(Equal("prod/Completed"))
		e := stageEntry(ctx, sbp.Name, "dev")
		Expect(e.CompletedAt.Time).To(BeTemporally(">=", e.ClockStartedAt.Add(3*time.Second)))
		Expect(e.CompletedAt.Time).To(BeTemporally("<=", e.ClockStartedAt.Add(6*time.Second)), "promoted late")
	})

	It("halts at the progress deadline, stays halted, and runs again on the retry annotation", func() {
		w := newSBPWorld(ctx)
		agg := w.aggregator(ctx)
		dev := w.cluster(ctx, "dev-1", "dev")
		w.cluster(ctx, "prod-1", "prod")
		w.deployment(ctx, "web")
		sbp := createSBP(ctx, w.policy(agg).
			Stage("dev", w.selector("dev")).Condition(reporting(agg, 1)).ProgressDeadline(3*time.Second).
			Stage("prod", w.selector("prod")).Obj())
		devName := stageName(sbp.Name, "dev")
		Eventually(sbpState(ctx, sbp.Name)).Should(Equal("dev/Progressing/" + communityv1alpha1.ReasonAwaitingStatus))
		uid := getBindingPolicy(ctx, devName).UID

		Eventually(sbpProgress(ctx, sbp.Name), 10*time.Second).Should(Equal("dev/Halted"))
		Expect(sbpCondition(ctx, sbp.Name, communityv1alpha1.ConditionHalted)()).To(Equal("True/" + communityv1alpha1.ReasonProgressDeadlineExceeded))
		e := stageEntry(ctx, sbp.Name, "dev")
		Expect(e.Result).To(Equal(communityv1alpha1.StageHalted))
		Expect(e.CompletedAt.Time).To(BeTemporally(">=", e.ClockStartedAt.Add(3*time.Second)))
		Eventually(eventCount(ctx, sbp.Name, "StageHalted")).Should(Equal(1))
		Expect(getBindingPolicy(ctx, devName).UID).To(Equal(uid), "a halt changes no BindingPolicy")

		// Sticky: a spec edit does not clear the halt (a longer deadline leaves time to see the retried stage).
		editSBP(ctx, sbp.Name, func(s *communityv1alpha1.StagedBindingPolicy) {
			s.Spec.Stages[0].ProgressDeadline = &metav1.Duration{Duration: time.Minute}
		})
		generation := getSBP(ctx, sbp.Name).Generation
		Eventually(func() int64 { return getSBP(ctx, sbp.Name).Status.ObservedGeneration }).Should(Equal(generation))
		Consistently(sbpProgress(ctx, sbp.Name), time.Second).Should(Equal("dev/Halted"))

		annotateSBP(ctx, sbp.Name, communityv1alpha1.AnnotationRetryStage, "dev")
		Eventually(sbpState(ctx, sbp.Name)).Should(Equal("dev/Progressing/" + communityv1alpha1.ReasonAwaitingStatus))
		Expect(stageResult(ctx, sbp.Name, "dev")()).To(Equal(communityv1alpha1.StageActive))
		Expect(clockOf(ctx, sbp.Name, "dev")()).To(BeTemporally(">", e.ClockStartedAt.Time))
		Expect(sbpCondition(ctx, sbp.Name, communityv1alpha1.ConditionHalted)()).To(Equal("False/" + communityv1alpha1.ReasonNotHalted))
		Eventually(sbpAnnotations(ctx, sbp.Name)).ShouldNot(HaveKey(communityv1alpha1.AnnotationRetryStage))
		Eventually(eventCount(ctx, sbp.Name, "StageRetried")).Should(Equal(1))

		w.reported(dev, "web")
		Eventually(sbpProgress(ctx, sbp.Name)).Should(Equal("prod/Completed"))
		Eventually(bindingPolicyNames(ctx, sbp.Name)).Should(Equal([]string{stageName(sbp.Name, "prod")}))
	})

	It("halts on a failureCondition even while another object still lacks status", func() {
		w := newSBPWorld(ctx)
		agg := w.aggregator(ctx)
		dev := w.cluster(ctx, "dev-1", "dev")
		w.cluster(ctx, "prod-1", "prod")
		w.deployment(ctx, "web")
		// KubeStellar copies an object's name into a label of its CombinedStatus: a name longer than 63
		// characters never gets one, so this Deployment never has status.
		w.deployment(ctx, "web-"+strings.Repeat("x", 60))
		// A cluster reporting no available replica has no availableReplicas key, and no row: the failure
		// condition fires on a complete row that reports fewer replicas than wanted.
		sbp := createSBP(ctx, w.policy(agg).
			Stage("dev", w.selector("dev")).Condition("results['"+agg+"'][0].available >= 2.0").
			FailureCondition("results['"+agg+"'][0].count >= 1.0 && results['"+agg+"'][0].available < 2.0").
			Stage("prod", w.selector("prod")).Obj())
		Eventually(sbpState(ctx, sbp.Name)).Should(Equal("dev/Progressing/" + communityv1alpha1.ReasonAwaitingStatus))

		w.report(dev, "web", map[string]any{"availableReplicas": int64(1)})
		Eventually(sbpProgress(ctx, sbp.Name)).Should(Equal("dev/Halted"))
		Expect(sbpCondition(ctx, sbp.Name, communityv1alpha1.ConditionHalted)()).To(Equal("True/" + communityv1alpha1.ReasonFailureCondition))
		e := stageEntry(ctx, sbp.Name, "dev")
		Expect(e.LastEvaluation.Objects).To(Equal(int32(2)))
		Expect(e.LastEvaluation.ObjectsWithStatus).To(Equal(int32(1)))
		Expect(e.Message).To(ContainSubstring("failureCondition"))
		Eventually(eventCount(ctx, sbp.Name, "StageHalted")).Should(Equal(1))
		Expect(getBindingPolicy(ctx, stageName(sbp.Name, "prod"))).To(BeNil())
	})
})

// Expressions: a compile error is refused at admission with its field path; a run-time error never
// passes a gate and never passes silently.
var _ = Describe("StagedBindingPolicy, CEL errors", func() {
	ctx := context.Background()

	It("refuses expressions that do not compile, with their field paths", func() {
		w := newSBPWorld(ctx)
		bad := w.policy().
			Stage("dev", w.selector("dev")).Condition("results[").
			Stage("prod", w.selector("prod")).FailureCondition("nope > 1").Obj()
		err := k8sClient.Create(ctx, bad)
		Expect(apierrors.IsInvalid(err)).To(BeTrue(), "want a 422, got %v", err)
		Expect(causeFields(err)).To(ContainElements("spec.stages[0].condition", "spec.stages[1].failureCondition"))

		// An update is refused the same way.
		sbp := createSBP(ctx, w.policy().Stage("dev", w.selector("dev")).Paused(true).Obj())
		sbp = getSBP(ctx, sbp.Name)
		patch := client.MergeFrom(sbp.DeepCopy())
		sbp.Spec.Stages[0].Filter = "combinedStatus.results.size() > 0"
		err = k8sClient.Patch(ctx, sbp, patch)
		Expect(apierrors.IsInvalid(err)).To(BeTrue(), "want a 422, got %v", err)
		Expect(causeFields(err)).To(ContainElement("spec.stages[0].filter"))
	})

	It("reports a run-time error as GateError with an event and a metric, and proceeds once it is fixed", func() {
		w := newSBPWorld(ctx)
		agg := w.aggregator(ctx)
		dev := w.cluster(ctx, "dev-1", "dev")
		w.cluster(ctx, "prod-1", "prod")
		w.deployment(ctx, "web")
		// The condition is evaluated once every destination has its row.
		w.reported(dev, "web")
		sbp := createSBP(ctx, w.policy(agg).
			Stage("dev", w.selector("dev")).Condition("results['nope'][0].x > 0.0").
			Stage("prod", w.selector("prod")).Obj())

		Eventually(sbpCondition(ctx, sbp.Name, communityv1alpha1.ConditionGateError)).Should(Equal("True/" + communityv1alpha1.ReasonEvaluationError))
		Expect(sbpState(ctx, sbp.Name)()).To(Equal("dev/Waiting/" + communityv1alpha1.ReasonGateError))
		Expect(gateErrorMessage(ctx, sbp.Name)).To(And(ContainSubstring("spec.stages[0].condition"), ContainSubstring("no such key")))
		Eventually(eventCount(ctx, sbp.Name, "GateError")).Should(Equal(1))
		Expect(metricSum("drover_sbp_cel_evaluation_errors_total", "sbp", sbp.Name,
			func(m *dto.Metric) float64 { return m.GetCounter().GetValue() })).To(BeNumerically(">=", 1))
		Expect(getBindingPolicy(ctx, stageName(sbp.Name, "prod"))).To(BeNil())

		editSBP(ctx, sbp.Name, func(s *communityv1alpha1.StagedBindingPolicy) { s.Spec.Stages[0].Condition = reporting(agg, 0) })
		Eventually(sbpProgress(ctx, sbp.Name)).Should(Equal("prod/Completed"))
		Expect(sbpCondition(ctx, sbp.Name, communityv1alpha1.ConditionGateError)()).To(Equal("False/" + communityv1alpha1.ReasonNoGateError))
		Expect(eventCount(ctx, sbp.Name, "GateError")()).To(Equal(1))
	})
})

// gateErrorMessage is the message of the policy's GateError condition.
func gateErrorMessage(ctx context.Context, name string) string {
	for _, c := range getSBP(ctx, name).Status.Conditions {
		if c.Type == communityv1alpha1.ConditionGateError {
			return c.Message
		}
	}
	return ""
}
