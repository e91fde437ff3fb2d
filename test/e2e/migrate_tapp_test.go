package e2e

import (
	"maps"
	"os"
	"path/filepath"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tkestackv1 "github.com/drover-dev/drover/api/tkestack/apps/v1"
	"github.com/drover-dev/drover/internal/localcluster"
	"github.com/drover-dev/drover/internal/preview"
	"github.com/drover-dev/drover/internal/tapp"
	"github.com/drover-dev/drover/internal/tapp/core"
)

// withoutTApp is the manager's --controllers with every controller but the TApp one: drover not yet (or no
// longer) running TApps, its TApp webhooks admitting every object unchanged.
const withoutTApp = "--controllers=nodepool,yurtappdaemon,uniteddaemonset,persistentpodstate,stagedbindingpolicy"

// The move from TKEStack's TApp controller (docs/migrate/tkestack-tapp.md), on objects as TKEStack leaves
// them: a TApp with TKEStack's spec defaults and status, and an updateStrategy.template naming a template
// since removed; its pods with TKEStack's names, labels (decimal hashes), controller reference, readiness
// gate and gate condition; one pod still on an older image, as an interrupted rollout leaves it. The preview
// says what will happen, the switch restarts nothing but that pod's container in place, and the rollback
// gives the pods TKEStack's hash labels back.
var _ = Describe("Moving from TKEStack's TApp controller", Ordered, func() {
	const name = "moved"
	const image, olderImage = "nginx:1.27", "nginx:1.26"
	// TKEStack's hashes: pods 0 and 2 of the current template, pod 1 of the older one (only the image differs,
	// so the uniq hash is the same).
	upstreamHashes := map[string][2]string{
		"0": {"1111111111", "2222222222"}, "1": {"3333333333", "2222222222"}, "2": {"1111111111", "2222222222"},
	}
	var ns string
	var before map[string]types.UID

	BeforeAll(func() {
		Expect(cluster.RestartManager(suiteCtx, withoutTApp)).To(Succeed())
		DeferCleanup(func() { Expect(cluster.RestartManager(suiteCtx)).To(Succeed()) })
		DeferCleanup(applyDroverTAppCRD) // whatever happened, the other specs get drover's CRD back
		ns = newNamespace("e2e-move-tapp")
	})

	It("starts from the state TKEStack leaves", func() {
		By("replacing drover's CRD with one as a TKEStack user creates it: v1, no schema, status and scale")
		installUpstreamTAppCRD()
		app := newTApp(ns, name, 3, image)
		app.Labels = map[string]string{"app": name}
		app.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}}
		app.Spec.DefaultTemplateName = tkestackv1.DefaultTemplateName
		app.Spec.UpdateStrategy = tkestackv1.UpdateStrategy{Template: "t1", MaxUnavailable: ptr.To(intstr.FromInt32(1)),
			ForceUpdate: tkestackv1.ForceUpdateStrategy{MaxUnavailable: ptr.To(intstr.FromString("100%"))}}
		createTApp(app)
		for id, h := range upstreamHashes {
			img := image
			if id == "1" {
				img = olderImage
			}
			Expect(k8sClient.Create(suiteCtx, upstreamTAppPod(app, id, img, h))).To(Succeed())
		}
		Eventually(func(g Gomega) {
			pods := tappPods(g, ns, name)
			g.Expect(pods).To(HaveLen(3))
			for _, p := range pods {
				g.Expect(p.Status.Phase).To(Equal(corev1.PodRunning), "pod %s", p.Name)
				if podConditionStatus(p, tkestackv1.InPlaceUpdateReady) != corev1.ConditionTrue {
					// TKEStack's controller writes the gate condition of every pod it created.
					p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: tkestackv1.InPlaceUpdateReady,
						Status: corev1.ConditionTrue, LastTransitionTime: metav1.Now()})
					g.Expect(k8sClient.Status().Update(suiteCtx, p)).To(Succeed())
				}
			}
			before = uids(pods)
		}).WithTimeout(tappTimeout).WithPolling(tappPoll).Should(Succeed())
		updateTAppStatus(ns, name, func(s *tkestackv1.TAppStatus) {
			*s = tkestackv1.TAppStatus{ObservedGeneration: 1, Replicas: 3, ReadyReplicas: 3, ScaleLabelSelector: "app=" + name,
				AppStatus: tkestackv1.AppRunning, Statuses: map[string]tkestackv1.InstanceStatus{"0": "Running", "1": "Running", "2": "Running"}}
		})
	})

	It("previews the switch: the older pod updated in place, the others relabelled, the stale template noted", func() {
		reports, err := tapp.Preview(suiteCtx, k8sClient, ns, core.Options{DeletePodAfterAppFinish: true})
		Expect(err).NotTo(HaveOccurred())
		Expect(reports).To(HaveLen(1))
		effects := map[string]preview.Effect{}
		for _, it := range reports[0].Items {
			effects[it.Object] = it.Effect
		}
		Expect(effects).To(Equal(map[string]preview.Effect{"pod moved-0": preview.Relabel,
			"pod moved-1": preview.UpdateInPlace, "pod moved-2": preview.Relabel}))
		Expect(reports[0].Restarting()).To(ConsistOf(HaveField("Why", ContainSubstring(olderImage+" -> "+image))))
		Expect(reports[0].Notices).To(ConsistOf(ContainSubstring(`spec.updateStrategy.template names "t1"`)))
	})

	It("switches to drover with no pod deleted or recreated, and only the announced container restarted", func() {
		applyDroverTAppCRD() // as the guide says: drover's CRD applied over the user's
		Expect(cluster.RestartManager(suiteCtx)).To(Succeed())
		pods := eventuallyRunning(ns, name, sameImages(image, "0", "1", "2"), nil)
		Expect(uids(pods)).To(Equal(before))
		Expect(restarts(pods)).To(Equal(map[string]int32{"0": 0, "1": 1, "2": 0}))
		for id, p := range pods {
			Expect(core.IsCurrentHashFormat(p.Labels[tkestackv1.TAppHashKey])).To(BeTrue(), "pod %s", id)
			h, ok := core.UpstreamHashesOf(p)
			Expect(ok).To(BeTrue(), "pod %s keeps TKEStack's hashes", id)
			Expect([2]string{h.Template, h.Uniq}).To(Equal(upstreamHashes[id]))
		}
		Eventually(func(g Gomega) {
			c := conditionOf(getTApp(g, ns, name), tkestackv1.TAppReplicaFailure)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Status).To(Equal(metav1.ConditionFalse), "ReplicaFailure: %s", c.Message)
		}).WithTimeout(tappTimeout).WithPolling(tappPoll).Should(Succeed())
	})

	It("rolls back: drover's controller stopped, every pod kept with TKEStack's hash labels", func() {
		Expect(cluster.RestartManager(suiteCtx, withoutTApp)).To(Succeed())
		reports, restores, err := tapp.PlanRollback(suiteCtx, k8sClient, ns)
		Expect(err).NotTo(HaveOccurred())
		Expect(reports[0].Restarting()).To(BeEmpty())
		Expect(tapp.ApplyRollback(suiteCtx, k8sClient, restores)).To(Succeed())
		Eventually(func(g Gomega) {
			pods := tappPods(g, ns, name)
			g.Expect(uids(pods)).To(Equal(before))
			for id, p := range pods {
				g.Expect([2]string{p.Labels[tkestackv1.TAppHashKey], p.Labels[tkestackv1.TAppUniqHashKey]}).To(Equal(upstreamHashes[id]))
				g.Expect(p.Annotations).NotTo(HaveKey(tkestackv1.UpstreamHashesKey))
			}
		}).WithTimeout(tappTimeout).WithPolling(tappPoll).Should(Succeed())
	})
})

// upstreamTAppPod is pod id of app as TKEStack's controller creates it: name <tapp>-<id> with generateName,
// the template's labels plus the instance label and TKEStack's two hash labels, a controller reference
// without blockOwnerDeletion, and the in-place readiness gate.
func upstreamTAppPod(app *tkestackv1.TApp, id, image string, hashes [2]string) *corev1.Pod {
	labels := maps.Clone(app.Spec.Template.Labels)
	labels[tkestackv1.TAppInstanceKey] = id
	labels[tkestackv1.TAppHashKey], labels[tkestackv1.TAppUniqHashKey] = hashes[0], hashes[1]
	spec := *app.Spec.Template.Spec.DeepCopy()
	spec.Containers[0].Image = image
	spec.ReadinessGates = []corev1.PodReadinessGate{{ConditionType: tkestackv1.InPlaceUpdateReady}}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: app.Name + "-" + id, GenerateName: app.Name + "-", Namespace: app.Namespace,
			Labels: labels, OwnerReferences: []metav1.OwnerReference{{APIVersion: tkestackv1.GroupVersion.String(),
				Kind: "TApp", Name: app.Name, UID: app.UID, Controller: ptr.To(true)}}},
		Spec: spec,
	}
}

// updateTAppStatus writes the TApp's status as another controller would.
func updateTAppStatus(ns, name string, change func(*tkestackv1.TAppStatus)) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		app := getTApp(g, ns, name)
		change(&app.Status)
		g.Expect(k8sClient.Status().Update(suiteCtx, app)).To(Succeed())
	}).WithTimeout(tappTimeout).WithPolling(tappPoll).Should(Succeed())
}

const tappCRDName = "tapps.apps.tkestack.io"

// installUpstreamTAppCRD turns the TApp CRD into the one a TKEStack user runs on Kubernetes 1.22 and later
// (TKEStack's own is apiextensions v1beta1, which these versions no longer serve): version v1 without a schema
// (every field preserved), the status and scale subresources, no printer columns.
func installUpstreamTAppCRD() {
	GinkgoHelper()
	crd := &unstructured.Unstructured{}
	crd.SetGroupVersionKind(schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"})
	Expect(k8sClient.Get(suiteCtx, client.ObjectKey{Name: tappCRDName}, crd)).To(Succeed())
	version := map[string]any{
		"name": "v1", "served": true, "storage": true,
		"schema": map[string]any{"openAPIV3Schema": map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true}},
		"subresources": map[string]any{"status": map[string]any{}, "scale": map[string]any{
			"specReplicasPath": ".spec.replicas", "statusReplicasPath": ".status.replicas",
			"labelSelectorPath": ".status.scaleLabelSelector"}},
	}
	Expect(unstructured.SetNestedSlice(crd.Object, []any{version}, "spec", "versions")).To(Succeed())
	Expect(k8sClient.Update(suiteCtx, crd)).To(Succeed())
}

// applyDroverTAppCRD applies drover's TApp CRD over the cluster's (applyDroverCRD).
func applyDroverTAppCRD() {
	GinkgoHelper()
	applyDroverCRD("tapp", "apps.tkestack.io_tapps.yaml")
}

// applyDroverCRD applies the CRD file of drover's component over the cluster's, server-side, taking the fields
// over as `kubectl apply --server-side --force-conflicts` does. A conversion webhook calls the manager's
// Service, as the installation renders it.
func applyDroverCRD(component, file string) {
	GinkgoHelper()
	root, err := localcluster.FindRepoRoot("")
	Expect(err).NotTo(HaveOccurred())
	data, err := os.ReadFile(filepath.Join(root, "config", "components", component, "crd", file))
	Expect(err).NotTo(HaveOccurred())
	objs, err := localcluster.DecodeYAML(data)
	Expect(err).NotTo(HaveOccurred())
	Expect(objs).To(HaveLen(1))
	crd := objs[0]
	crd.SetManagedFields(nil)
	svc := []string{"spec", "conversion", "webhook", "clientConfig", "service"}
	if _, found, _ := unstructured.NestedMap(crd.Object, svc...); found {
		Expect(unstructured.SetNestedField(crd.Object, localcluster.ManagerNamespace, append(svc, "namespace")...)).To(Succeed())
		Expect(unstructured.SetNestedField(crd.Object, localcluster.WebhookService, append(svc, "name")...)).To(Succeed())
	}
	Expect(k8sClient.Apply(suiteCtx, client.ApplyConfigurationFromUnstructured(crd), client.FieldOwner("kubectl"), client.ForceOwnership)).To(Succeed())
}
