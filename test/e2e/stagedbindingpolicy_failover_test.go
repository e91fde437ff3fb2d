package e2e

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	communityv1alpha1 "github.com/drover-dev/drover/api/kubestellar/community/v1alpha1"
	"github.com/drover-dev/drover/internal/localcluster"
)

// failoverRollout runs a rollout across a change of leader. A second manager process takes the Lease (the
// cluster's manager is stopped and comes back as a waiting candidate that serves the webhooks), runs the
// first stage, and is killed with SIGKILL while the second stage waits for its last cluster to report the
// Deployment available (a kssim script ConfigMap holds that report back). The cluster's manager takes the
// Lease once it expires; the report then arrives and the rollout completes. Every transition happens once,
// and every BindingPolicy is created once.
func failoverRollout() {
	f := newSBPFixture("sbp-lease", map[string]map[string]string{
		"one": {"tier": "one"}, "two-a": {"tier": "two"}, "two-b": {"tier": "two"},
	})
	f.script(map[string]map[string]any{"two-b": deploymentStatus(0)})
	scraper := newSBPScraper(cluster.MetricsAddr, f.id)

	fo := handOverLease()

	By("running the first stage on the second manager")
	rec := recordBindingPolicies(f.id)
	sbp := f.createSBP(communityv1alpha1.ModeExclusive,
		f.stage("one", "one", f.available(1)), f.stage("two", "two", f.available(2)))
	one, two := sbp.Name+".stage.one", sbp.Name+".stage.two"
	Eventually(func(g Gomega) {
		s := getSBP(g, sbp.Name)
		g.Expect(s.Status.ActiveStage).To(Equal("two"))
		e := stageEntry(s, "two")
		g.Expect(e).NotTo(BeNil())
		g.Expect(e.LastEvaluation).NotTo(BeNil())
		g.Expect(e.LastEvaluation.Outcome).To(Equal(communityv1alpha1.OutcomeNotSatisfied), "%+v", e.LastEvaluation)
		g.Expect(e.LastEvaluation.ObjectsWithStatus).To(BeEquivalentTo(1), "%+v", e.LastEvaluation)
		g.Expect(live(rec.snapshot(g))).To(Equal([]string{two}), "the handover to stage two is done")
		g.Expect(transitionEvents(sbpEventCounts(g, s.UID))).To(Equal(map[string]int{
			"StageActivated/one": 1, "StageSucceeded/one": 1, "StageActivated/two": 1,
			"BindingPolicyCreated/" + one: 1, "BindingPolicyCreated/" + two: 1,
		}))
	}).WithTimeout(sbpTimeout).WithPolling(interval).Should(Succeed())
	transitions, _ := sbpMetrics(Default, scraper, sbp.Name)
	Expect(transitions).To(BeEmpty(), "the waiting manager makes no transition")

	By("killing the leader while stage two waits, and letting the other manager take over")
	Expect(fo.b.Kill()).To(Succeed())
	Eventually(leaseHolder).WithTimeout(failoverTimeout).WithPolling(interval).
		Should(And(Not(BeEmpty()), Not(Equal(fo.holderB))), "the cluster's manager takes the expired Lease")

	By("completing once the last cluster reports the Deployment available")
	f.script(map[string]map[string]any{"two-b": deploymentStatus(1)})
	done := eventuallyPhase(sbp.Name, communityv1alpha1.PhaseCompleted, "two")
	expectCompleted(done, "one", "two")
	Eventually(func(g Gomega) map[string]int { return transitionEvents(sbpEventCounts(g, sbp.UID)) }).
		WithTimeout(sbpTimeout).WithPolling(interval).Should(Equal(map[string]int{
		"StageActivated/one": 1, "StageSucceeded/one": 1, "StageActivated/two": 1, "RolloutCompleted/two": 1,
		"BindingPolicyCreated/" + one: 1, "BindingPolicyCreated/" + two: 1,
	}))
	events := rec.snapshot(Default)
	Expect(incarnations(events)).To(HaveLen(2))
	Expect(incarnations(events)).To(HaveEach(HaveLen(1)), "no BindingPolicy is created twice")
	Expect(live(events)).To(Equal([]string{two}))
	Eventually(func(g Gomega) map[string]float64 {
		transitions, _ := sbpMetrics(g, scraper, sbp.Name)
		return transitions
	}).WithTimeout(sbpTimeout).WithPolling(interval).Should(Equal(map[string]float64{"two/Succeeded": 1}),
		"the new leader makes only the last transition")
}

// handOverLease starts a second manager process and gives it the Lease: the cluster's manager is stopped
// (SIGTERM releases the Lease) and started again, as a candidate that serves the webhooks.
func handOverLease() *failover {
	GinkgoHelper()
	By("handing the Lease to a second manager process")
	first, err := cluster.LeaseHolder(suiteCtx)
	Expect(err).NotTo(HaveOccurred())
	Expect(first).NotTo(BeEmpty())
	b, err := cluster.StartExtraManager(suiteCtx, "drover-manager-b")
	Expect(err).NotTo(HaveOccurred())
	fo := &failover{b: b}
	DeferCleanup(fo.restore)
	fo.managerDown = true
	Expect(cluster.StopManager()).To(Succeed())
	Eventually(leaseHolder).WithTimeout(failoverTimeout).WithPolling(interval).
		Should(And(Not(BeEmpty()), Not(Equal(first))), "the second manager takes the released Lease")
	fo.holderB, err = cluster.LeaseHolder(suiteCtx)
	Expect(err).NotTo(HaveOccurred())
	Expect(cluster.RestartManager(suiteCtx)).To(Succeed())
	fo.managerDown = false
	Expect(leaseHolder()).To(Equal(fo.holderB), "the restarted manager waits as a candidate")
	return fo
}

// failover undoes what failoverRollout changed, whatever step it stopped at: the cluster's manager runs
// and holds the Lease again, and the second manager is gone.
type failover struct {
	b           *localcluster.ManagerProcess
	holderB     string
	managerDown bool
}

func (fo *failover) restore() {
	if fo.managerDown {
		Expect(cluster.RestartManager(suiteCtx)).To(Succeed())
	}
	Expect(fo.b.Stop(30 * time.Second)).To(Succeed()) // SIGTERM releases the Lease; nothing when killed already
	Eventually(leaseHolder).WithTimeout(failoverTimeout).WithPolling(interval).
		Should(And(Not(BeEmpty()), Not(Equal(fo.holderB))), "the cluster's manager holds the Lease again")
}

func leaseHolder() (string, error) { return cluster.LeaseHolder(suiteCtx) }

// deploymentStatus is the status a cluster reports for a one-replica Deployment with available replicas.
func deploymentStatus(available int64) map[string]any {
	return map[string]any{"replicas": 1, "updatedReplicas": 1, "readyReplicas": available, "availableReplicas": available}
}

// stageEntry returns the status entry of a stage, or nil.
func stageEntry(sbp *communityv1alpha1.StagedBindingPolicy, name string) *communityv1alpha1.StageStatus {
	for i := range sbp.Status.Stages {
		if sbp.Status.Stages[i].Name == name {
			return &sbp.Status.Stages[i]
		}
	}
	return nil
}
