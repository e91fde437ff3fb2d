package e2e

import (
	"path/filepath"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	communityv1alpha1 "github.com/drover-dev/drover/api/kubestellar/community/v1alpha1"
	controlv1alpha1 "github.com/drover-dev/drover/api/kubestellar/control/v1alpha1"
	"github.com/drover-dev/drover/internal/localcluster"
)

// StagedBindingPolicy on the local cluster: kssim plays KubeStellar as a process (Bindings, CombinedStatuses,
// clusters reporting Deployments by themselves or as a script ConfigMap says), the real garbage collector
// removes the BindingPolicies of a deleted policy, and the manager's metrics and leader election are the
// real ones. Nothing writes a status by hand.
var _ = Describe("StagedBindingPolicy", func() {
	It("runs the KubeStellar stager's example unattended to Completed and reports it in the metrics", func() {
		const name = "nginx-staged-bindingpolicy"
		dev, prod := name+".stage.dev", name+".stage.prod"
		rec := recordBindingPolicies(name)
		scraper := newSBPScraper(cluster.MetricsAddr, newNamespace("sbp-metrics"))

		By("applying the samples: the clusters, the collector and the Deployment, then the example")
		root, err := localcluster.FindRepoRoot("")
		Expect(err).NotTo(HaveOccurred())
		for _, file := range []string{"stagedbindingpolicy-kubestellar.yaml", "stagedbindingpolicy.yaml"} {
			applied, err := localcluster.ApplyFile(suiteCtx, cluster.Client, filepath.Join(root, "config", "samples", file))
			Expect(err).NotTo(HaveOccurred())
			DeferCleanup(deleteApplied, applied)
		}

		By("placing dev first, then prod once dev's condition holds, then completing")
		sbp := eventuallyPhase(name, communityv1alpha1.PhaseCompleted, "prod")
		expectCompleted(sbp, "dev", "prod")
		Eventually(func(g Gomega) []string { return live(rec.snapshot(g)) }).
			WithTimeout(sbpTimeout).WithPolling(interval).Should(Equal([]string{prod}))
		events := rec.snapshot(Default)
		Expect(incarnations(events)).To(HaveLen(2))
		Expect(incarnations(events)).To(HaveEach(HaveLen(1)), "no BindingPolicy is created twice")
		createdDev := firstEvent(events, dev, func(bpEvent) bool { return true })
		createdProd := firstEvent(events, prod, func(bpEvent) bool { return true })
		deletingDev := firstEvent(events, dev, deletionStarted)
		Expect(createdDev).To(BeNumerically(">=", 0))
		Expect(createdProd).To(BeNumerically(">", createdDev), "dev is placed first")
		Expect(deletingDev).To(BeNumerically(">", createdProd), "dev is unplaced only after prod exists")
		expectGenerated(events[createdDev].bp, sbp, "dev")
		expectGenerated(events[createdProd].bp, sbp, "prod")

		By("selecting the Deployment's ReplicaSet and Pods too, as KubeStellar does: the label is on them")
		Eventually(func(g Gomega) []string {
			b := &controlv1alpha1.Binding{}
			g.Expect(k8sClient.Get(suiteCtx, client.ObjectKey{Name: prod}, b)).To(Succeed())
			var resources []string
			for _, e := range b.Spec.Workload.NamespaceScope {
				resources = append(resources, e.Resource)
			}
			return resources
		}).WithTimeout(sbpTimeout).WithPolling(interval).Should(ContainElements("deployments", "replicasets", "pods"))

		By("emitting each transition once and counting it in the metrics")
		Eventually(func(g Gomega) map[string]int { return transitionEvents(sbpEventCounts(g, sbp.UID)) }).
			WithTimeout(sbpTimeout).WithPolling(interval).Should(Equal(map[string]int{
			"StageActivated/dev": 1, "StageSucceeded/dev": 1, "StageActivated/prod": 1, "RolloutCompleted/prod": 1,
			"BindingPolicyCreated/" + dev: 1, "BindingPolicyCreated/" + prod: 1,
		}))
		Eventually(func(g Gomega) {
			transitions, phases := sbpMetrics(g, scraper, name)
			g.Expect(transitions).To(Equal(map[string]float64{
				"dev/Activated": 1, "dev/Succeeded": 1, "prod/Activated": 1, "prod/Succeeded": 1,
			}))
			g.Expect(phases).To(Equal(map[string]float64{
				"Progressing": 0, "Waiting": 0, "Paused": 0, "Halted": 0, "Completed": 1,
			}))
		}).WithTimeout(sbpTimeout).WithPolling(interval).Should(Succeed())
	})

	It("garbage-collects its BindingPolicies, Bindings and CombinedStatuses when it is deleted", func() {
		f := newSBPFixture("sbp-gc", map[string]map[string]string{"a": {"tier": "one"}, "b": {"tier": "two"}})
		sbp := f.createSBP(communityv1alpha1.ModeCumulative, f.stage("one", "one", f.available(1)), f.stage("two", "two", ""))
		expectCompleted(eventuallyPhase(sbp.Name, communityv1alpha1.PhaseCompleted, "two"), "one", "two")
		selector := client.MatchingLabels{communityv1alpha1.LabelStagedBindingPolicy: sbp.Name}
		var bps controlv1alpha1.BindingPolicyList
		Expect(k8sClient.List(suiteCtx, &bps, selector)).To(Succeed())
		Expect(bps.Items).To(HaveLen(2), "Cumulative keeps both stages' BindingPolicies")

		Expect(k8sClient.Delete(suiteCtx, sbp)).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(k8sClient.List(suiteCtx, &bps, selector)).To(Succeed())
			g.Expect(bps.Items).To(BeEmpty())
			for _, bp := range []string{sbp.Name + ".stage.one", sbp.Name + ".stage.two"} {
				err := k8sClient.Get(suiteCtx, client.ObjectKey{Name: bp}, &controlv1alpha1.Binding{})
				g.Expect(client.IgnoreNotFound(err)).To(Succeed())
				g.Expect(err).To(HaveOccurred(), "Binding %s is gone", bp)
			}
			var statuses controlv1alpha1.CombinedStatusList
			g.Expect(k8sClient.List(suiteCtx, &statuses, client.InNamespace(f.id))).To(Succeed())
			g.Expect(statuses.Items).To(BeEmpty())
		}).WithTimeout(sbpTimeout).WithPolling(interval).Should(Succeed())
	})

	It("survives the loss of its leader mid-rollout: one transition each, no BindingPolicy lost or doubled", func() {
		failoverRollout()
	})
})

// deleteApplied deletes the objects ApplyFile reported ("Kind/name"): the sample objects.
func deleteApplied(applied []string) {
	gvks := map[string]schema.GroupVersionKind{
		"ManagedCluster":      managedClusterGVK,
		"StatusCollector":     controlv1alpha1.GroupVersion.WithKind("StatusCollector"),
		"Deployment":          appsv1.SchemeGroupVersion.WithKind("Deployment"),
		"StagedBindingPolicy": communityv1alpha1.GroupVersion.WithKind("StagedBindingPolicy"),
	}
	for _, a := range applied {
		kind, name, _ := strings.Cut(a, "/")
		gvk, ok := gvks[kind]
		Expect(ok).To(BeTrue(), "unexpected sample kind %s", kind)
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(gvk)
		u.SetName(name)
		if kind == "Deployment" {
			u.SetNamespace(metav1.NamespaceDefault)
		}
		Expect(client.IgnoreNotFound(k8sClient.Delete(suiteCtx, u))).To(Succeed())
	}
}
