package integration

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	communityv1alpha1 "github.com/drover-dev/drover/api/kubestellar/community/v1alpha1"
	controlv1alpha1 "github.com/drover-dev/drover/api/kubestellar/control/v1alpha1"
)

// Editing a rollout while it runs: stages are known by name, the rollout never moves backwards, and
// drover changes a BindingPolicy only when what it places changes.
var _ = Describe("StagedBindingPolicy, spec edits mid-rollout", func() {
	ctx := context.Background()

	It("continues a renamed active stage at its position, handing its BindingPolicy over", func() {
		w := newSBPWorld(ctx)
		agg := w.aggregator(ctx)
		w.cluster(ctx, "dev-1", "dev")
		w.cluster(ctx, "canary-1", "canary")
		w.deployment(ctx, "web")
		sbp := createSBP(ctx, w.policy(agg).
			Stage("dev", w.selector("dev")).
			Stage("canary", w.selector("canary")).Condition(reporting(agg, 1)).
			Stage("prod", w.selector("prod")).Obj())
		Eventually(sbpState(ctx, sbp.Name)).Should(Equal("canary/Progressing/" + communityv1alpha1.ReasonAwaitingStatus))
		oldName, newName := stageName(sbp.Name, "canary"), stageName(sbp.Name, "canary-2")
		old := getBindingPolicy(ctx, oldName)

		handover := watchHandover(ctx, sbp.Name, oldName, newName)
		editSBP(ctx, sbp.Name, func(s *communityv1alpha1.StagedBindingPolicy) { s.Spec.Stages[1].Name = "canary-2" })
		expectHandover(handover)
		Eventually(func() *controlv1alpha1.BindingPolicy { return getBindingPolicy(ctx, oldName) }).Should(BeNil())

		Eventually(sbpState(ctx, sbp.Name)).Should(Equal("canary-2/Progressing/" + communityv1alpha1.ReasonAwaitingStatus))
		st := getSBP(ctx, sbp.Name).Status
		Expect(st.ActiveStageIndex).To(HaveValue(Equal(int32(1))))
		Expect(stageEntry(ctx, sbp.Name, "dev").Result).To(Equal(communityv1alpha1.StageSucceeded))
		Expect(stageEntry(ctx, sbp.Name, "canary-2").Result).To(Equal(communityv1alpha1.StageActive))
		Expect(getBindingPolicy(ctx, newName).UID).NotTo(Equal(old.UID))
		Eventually(eventCount(ctx, sbp.Name, "ActiveStageReplaced")).Should(Equal(1))
		// Not back to the first stage: dev was activated once, and its BindingPolicy is not placed again.
		Consistently(bindingPolicyNames(ctx, sbp.Name), time.Second).Should(Equal([]string{newName}))
		Expect(eventCount(ctx, sbp.Name, "StageActivated")()).To(Equal(3))
		// The superseded entry goes with its BindingPolicy.
		Eventually(stageResult(ctx, sbp.Name, "canary")).Should(BeEmpty())
	})

	It("updates every live BindingPolicy in place on a downsync edit and restarts the active stage's clock", func() {
		w := newSBPWorld(ctx)
		agg := w.aggregator(ctx)
		w.cluster(ctx, "dev-1", "dev")
		w.cluster(ctx, "prod-1", "prod")
		w.deployment(ctx, "web")
		sbp := createSBP(ctx, w.policy(agg).Mode(communityv1alpha1.ModeCumulative).
			Stage("dev", w.selector("dev")).
			Stage("prod", w.selector("prod")).Condition(reporting(agg, 1)).Obj())
		Eventually(sbpState(ctx, sbp.Name)).Should(Equal("prod/Progressing/" + communityv1alpha1.ReasonAwaitingStatus))
		names := []string{stageName(sbp.Name, "dev"), stageName(sbp.Name, "prod")}
		Expect(bindingPolicyNames(ctx, sbp.Name)()).To(Equal(names))
		before := map[string]*controlv1alpha1.BindingPolicy{}
		for _, n := range names {
			before[n] = getBindingPolicy(ctx, n)
		}
		clock := clockOf(ctx, sbp.Name, "prod")()
		waitPastSecond(clock)

		extra := controlv1alpha1.DownsyncPolicyClause{}
		extra.ObjectSelectors = []metav1.LabelSelector{{MatchLabels: map[string]string{"app": w.app + "-sidecar"}}}
		editSBP(ctx, sbp.Name, func(s *communityv1alpha1.StagedBindingPolicy) { s.Spec.Downsync = append(s.Spec.Downsync, extra) })
		want := getSBP(ctx, sbp.Name).Spec.Downsync
		Expect(want).To(HaveLen(2))
		for _, n := range names {
			Eventually(func(g Gomega) {
				bp := getBindingPolicy(ctx, n)
				g.Expect(bp.Spec.Downsync).To(Equal(want))
				g.Expect(bp.UID).To(Equal(before[n].UID), "updated in place")
				g.Expect(bp.Generation).To(BeNumerically(">", before[n].Generation))
			}).Should(Succeed(), n)
		}
		Eventually(clockOf(ctx, sbp.Name, "prod")).Should(BeTemporally(">", clock))
		Eventually(sbpState(ctx, sbp.Name)).Should(Equal("prod/Progressing/" + communityv1alpha1.ReasonAwaitingStatus))
		Expect(stageEntry(ctx, sbp.Name, "dev").Result).To(Equal(communityv1alpha1.StageSucceeded))
		Expect(eventCount(ctx, sbp.Name, "StageActivated")()).To(Equal(2))
	})

	It("writes no BindingPolicy and keeps the clock when the active stage's condition is edited", func() {
		w := newSBPWorld(ctx)
		agg := w.aggregator(ctx)
		dev := w.cluster(ctx, "dev-1", "dev")
		w.cluster(ctx, "prod-1", "prod")
		w.deployment(ctx, "web")
		w.reported(dev, "web")
		sbp := createSBP(ctx, w.policy(agg).
			Stage("dev", w.selector("dev")).Condition(reporting(agg, 2)).
			Stage("prod", w.selector("prod")).Obj())
		Eventually(sbpState(ctx, sbp.Name)).Should(Equal("dev/Progressing/" + communityv1alpha1.ReasonConditionNotMet))
		devName := stageName(sbp.Name, "dev")
		bp := getBindingPolicy(ctx, devName)
		clock := clockOf(ctx, sbp.Name, "dev")()
		waitPastSecond(clock)

		editSBP(ctx, sbp.Name, func(s *communityv1alpha1.StagedBindingPolicy) { s.Spec.Stages[0].Condition = reporting(agg, 3) })
		generation := getSBP(ctx, sbp.Name).Generation
		Eventually(func() int64 { return getSBP(ctx, sbp.Name).Status.ObservedGeneration }).Should(Equal(generation))
		Consistently(func() string { return getBindingPolicy(ctx, devName).ResourceVersion }, time.Second).Should(Equal(bp.ResourceVersion))
		Expect(clockOf(ctx, sbp.Name, "dev")()).To(Equal(clock))
		Expect(sbpState(ctx, sbp.Name)()).To(Equal("dev/Progressing/" + communityv1alpha1.ReasonConditionNotMet))

		// A condition that holds is evaluated at once: nothing else changed, yet the stage passes.
		editSBP(ctx, sbp.Name, func(s *communityv1alpha1.StagedBindingPolicy) { s.Spec.Stages[0].Condition = reporting(agg, 1) })
		Eventually(sbpProgress(ctx, sbp.Name)).Should(Equal("prod/Completed"))
		Expect(clockOf(ctx, sbp.Name, "dev")()).To(Equal(clock))
	})
})

// A last stage with a condition completes the rollout and keeps its BindingPolicy (the stager deleted it
// and crashed); stages appended afterwards reopen the rollout.
var _ = Describe("StagedBindingPolicy, the last stage", func() {
	ctx := context.Background()

	It("completes with a condition, keeps its BindingPolicy, and reopens when a stage is appended", func() {
		w := newSBPWorld(ctx)
		agg := w.aggregator(ctx)
		dev := w.cluster(ctx, "dev-1", "dev")
		prod := w.cluster(ctx, "prod-1", "prod")
		w.deployment(ctx, "web")
		sbp := createSBP(ctx, w.policy(agg).Stage("dev", w.selector("dev")).Condition(reporting(agg, 1)).Obj())
		devName := stageName(sbp.Name, "dev")
		Eventually(sbpState(ctx, sbp.Name)).Should(Equal("dev/Progressing/" + communityv1alpha1.ReasonAwaitingStatus))
		uid := getBindingPolicy(ctx, devName).UID

		w.reported(dev, "web")
		Eventually(sbpProgress(ctx, sbp.Name)).Should(Equal("dev/Completed"))
		Expect(sbpCondition(ctx, sbp.Name, communityv1alpha1.ConditionReady)()).To(Equal("True/" + communityv1alpha1.ReasonRolloutCompleted))
		Consistently(bindingPolicyNames(ctx, sbp.Name), time.Second).Should(Equal([]string{devName}))
		Expect(getBindingPolicy(ctx, devName).UID).To(Equal(uid))
		Expect(eventCount(ctx, sbp.Name, "RolloutCompleted")()).To(Equal(1))

		w.reported(prod, "web") // the appended stage's condition is judged once prod-1 has its row
		editSBP(ctx, sbp.Name, func(s *communityv1alpha1.StagedBindingPolicy) {
			s.Spec.Stages = append(s.Spec.Stages, communityv1alpha1.Stage{Name: "prod",
				ClusterSelectors: []metav1.LabelSelector{w.selector("prod")}, Condition: reporting(agg, 0)})
		})
		Eventually(eventCount(ctx, sbp.Name, "RolloutReopened")).Should(Equal(1))
		Eventually(func() *controlv1alpha1.BindingPolicy { return getBindingPolicy(ctx, stageName(sbp.Name, "prod")) }).ShouldNot(BeNil())
		Eventually(sbpProgress(ctx, sbp.Name)).Should(Equal("prod/Completed"))
		Eventually(bindingPolicyNames(ctx, sbp.Name)).Should(Equal([]string{stageName(sbp.Name, "prod")}))
		Expect(stageEntry(ctx, sbp.Name, "dev").Result).To(Equal(communityv1alpha1.StageSucceeded))
		Eventually(eventCount(ctx, sbp.Name, "RolloutCompleted")).Should(Equal(2))
	})
})

// Exclusive places the active stage only, Cumulative every stage up to it; switching mode mid-rollout
// recomputes the set, removing BindingPolicies only once the active one is current.
var _ = Describe("StagedBindingPolicy, Exclusive and Cumulative", func() {
	ctx := context.Background()

	It("keeps earlier stages placed in Cumulative, hands them over to Exclusive, and places them again", func() {
		w := newSBPWorld(ctx)
		agg := w.aggregator(ctx)
		w.cluster(ctx, "dev-1", "dev")
		w.cluster(ctx, "prod-1", "prod")
		w.deployment(ctx, "web")
		sbp := createSBP(ctx, w.policy(agg).Mode(communityv1alpha1.ModeCumulative).
			Stage("dev", w.selector("dev")).
			Stage("prod", w.selector("prod")).Condition(reporting(agg, 1)).Obj())
		devName, prodName := stageName(sbp.Name, "dev"), stageName(sbp.Name, "prod")
		Eventually(sbpState(ctx, sbp.Name)).Should(Equal("prod/Progressing/" + communityv1alpha1.ReasonAwaitingStatus))
		Expect(bindingPolicyNames(ctx, sbp.Name)()).To(Equal([]string{devName, prodName}))
		devUID := getBindingPolicy(ctx, devName).UID

		handover := watchHandover(ctx, sbp.Name, devName, prodName)
		editSBP(ctx, sbp.Name, func(s *communityv1alpha1.StagedBindingPolicy) { s.Spec.Mode = communityv1alpha1.ModeExclusive })
		expectHandover(handover)
		Eventually(func() *controlv1alpha1.BindingPolicy { return getBindingPolicy(ctx, devName) }).Should(BeNil())
		Expect(bindingPolicyNames(ctx, sbp.Name)()).To(Equal([]string{prodName}))

		editSBP(ctx, sbp.Name, func(s *communityv1alpha1.StagedBindingPolicy) { s.Spec.Mode = communityv1alpha1.ModeCumulative })
		Eventually(bindingPolicyNames(ctx, sbp.Name)).Should(Equal([]string{devName, prodName}))
		Expect(getBindingPolicy(ctx, devName).UID).NotTo(Equal(devUID))
		// dev is placed again, not gated again: the rollout stays at prod.
		Consistently(sbpState(ctx, sbp.Name), time.Second).Should(Equal("prod/Progressing/" + communityv1alpha1.ReasonAwaitingStatus))
		Expect(stageEntry(ctx, sbp.Name, "dev").Result).To(Equal(communityv1alpha1.StageSucceeded))
	})
})
