package e2e

import (
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	communityv1alpha1 "github.com/drover-dev/drover/api/kubestellar/community/v1alpha1"
	controlv1alpha1 "github.com/drover-dev/drover/api/kubestellar/control/v1alpha1"
)

// Clusters that report late or report zero, as KubeStellar shows them: a destination that has not reported
// and one whose Deployment has no available replica (the key is then absent) both fail the collector's
// SUM, so the CombinedStatus has a row error instead of their rows. The stage waits for them, naming them,
// without halting on a failure condition that a missing row would satisfy.
var _ = Describe("StagedBindingPolicy, clusters that report late or report zero", func() {
	It("waits for a cluster that reports late and one that reports zero, then completes", func() {
		f := newSBPFixture("sbp-late", map[string]map[string]string{
			"late": {"tier": "one"}, "ok": {"tier": "one"}, "zero": {"tier": "one"},
		})
		// Nothing yet from late and ok (a nil status hides kssim's automatic report); zero reports none available.
		f.script(map[string]map[string]any{"late": nil, "ok": nil, "zero": deploymentStatus(0)})
		stage := f.stage("one", "one", fmt.Sprintf(
			`results[%q].exists(r, r.count == double(size(destinations)) && r.available == r.count)`, f.id))
		// Fires on a collector with no row: it must wait instead.
		stage.FailureCondition = fmt.Sprintf(`!results[%q].exists(r, r.available >= 1.0)`, f.id)
		sbp := f.createSBP(communityv1alpha1.ModeExclusive, stage)

		By("waiting, not halting, while no cluster has its row")
		Eventually(func(g Gomega) { expectAwaiting(g, sbp.Name, f.cluster("late")) }).
			WithTimeout(sbpTimeout).WithPolling(interval).Should(Succeed())
		Consistently(func(g Gomega) { expectAwaiting(g, sbp.Name, f.cluster("late")) }).
			WithTimeout(3 * time.Second).WithPolling(interval).Should(Succeed())

		By("still waiting once one cluster reports its replica, though its row alone meets the condition")
		f.script(map[string]map[string]any{"late": nil, "ok": deploymentStatus(1), "zero": deploymentStatus(0)})
		Eventually(func(g Gomega) {
			var cs controlv1alpha1.CombinedStatusList
			g.Expect(k8sClient.List(suiteCtx, &cs, client.InNamespace(f.id),
				client.MatchingLabels{controlv1alpha1.LabelCombinedStatusResource: "deployments"})).To(Succeed())
			g.Expect(cs.Items).To(HaveLen(1))
			g.Expect(cs.Items[0].Results).To(HaveLen(1))
			g.Expect(cs.Items[0].Results[0].Rows).To(HaveLen(1), "the row of ok")
			g.Expect(cs.Items[0].Results[0].RowErrors).To(HaveLen(1), "one entry per column")
		}).WithTimeout(sbpTimeout).WithPolling(interval).Should(Succeed())
		Consistently(func(g Gomega) { expectAwaiting(g, sbp.Name, f.cluster("late")) }).
			WithTimeout(3 * time.Second).WithPolling(interval).Should(Succeed())

		By("completing once the late cluster reports and the zero cluster's replica is available")
		f.script(map[string]map[string]any{"late": deploymentStatus(1), "ok": deploymentStatus(1), "zero": deploymentStatus(1)})
		expectCompleted(eventuallyPhase(sbp.Name, communityv1alpha1.PhaseCompleted, "one"), "one")
	})
})

// expectAwaiting checks that the policy waits at stage one for the clusters' reports: AwaitingStatus naming
// cluster, no gate error, not halted.
func expectAwaiting(g Gomega, name, cluster string) {
	s := getSBP(g, name)
	g.Expect(s.Status.Phase).To(Equal(communityv1alpha1.PhaseProgressing))
	e := stageEntry(s, "one")
	g.Expect(e).NotTo(BeNil())
	g.Expect(e.Result).To(Equal(communityv1alpha1.StageActive))
	g.Expect(e.LastEvaluation).NotTo(BeNil())
	g.Expect(e.LastEvaluation.Outcome).To(Equal(communityv1alpha1.OutcomeNotSatisfied))
	g.Expect(e.LastEvaluation.AwaitingDestinations).To(Equal([]string{cluster}))
	for _, c := range s.Status.Conditions {
		switch c.Type {
		case communityv1alpha1.ConditionProgressing:
			g.Expect(c.Reason).To(Equal(communityv1alpha1.ReasonAwaitingStatus), c.Message)
		case communityv1alpha1.ConditionGateError, communityv1alpha1.ConditionHalted:
			g.Expect(string(c.Status)).To(Equal("False"), c.Type+": "+c.Message)
		}
	}
}
