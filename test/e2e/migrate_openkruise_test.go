package e2e

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kruisev1alpha1 "github.com/drover-dev/drover/api/kruise/apps/v1alpha1"
	kruisev1beta1 "github.com/drover-dev/drover/api/kruise/apps/v1beta1"
	"github.com/drover-dev/drover/internal/persistentpodstate"
	"github.com/drover-dev/drover/internal/preview"
	"github.com/drover-dev/drover/internal/testutil"
)

// withoutPPS is the manager's --controllers with every controller but the PersistentPodState one: drover not
// yet (or no longer) running PPS, its PPS and pod webhooks admitting every object unchanged.
const withoutPPS = "--controllers=nodepool,yurtappdaemon,uniteddaemonset,tapp,stagedbindingpolicy"

const ppsCRDName = "persistentpodstates.apps.kruise.io"

// The move from OpenKruise's PersistentPodState controller (docs/migrate/openkruise.md), on objects as
// OpenKruise 1.9 leaves them: its CRD serving and storing only v1alpha1, a StatefulSet asking for a generated
// PPS, the PPS OpenKruise generated with the status its controller wrote. The preview keeps everything, the
// switch deletes and restarts nothing, a pod created again goes back to its node, and the guide's rollback
// gives OpenKruise 1.9 its CRD back with every object kept.
var _ = Describe("Moving from OpenKruise's PersistentPodState controller", Ordered, func() {
	const name = "web"
	var ns string
	var before map[string]types.UID
	var ppsUID types.UID
	var states map[string]kruisev1alpha1.PodState
	key := func() client.ObjectKey { return client.ObjectKey{Namespace: ns, Name: name} }

	BeforeAll(func() {
		Expect(cluster.RestartManager(suiteCtx, withoutPPS)).To(Succeed())
		DeferCleanup(func() { Expect(cluster.RestartManager(suiteCtx)).To(Succeed()) })
		DeferCleanup(applyDroverPPSCRD) // whatever happened, the other specs get drover's CRD back
		ns = newNamespace("e2e-move-pps")
	})

	It("starts from the state OpenKruise 1.9 leaves", func() {
		installKruise19PPSCRD(true)
		sts := testutil.MakeStatefulSet(name, ns, 3).
			Annotation(kruisev1alpha1.AnnotationAutoGeneratePersistentPodState, "true").
			Annotation(kruisev1alpha1.AnnotationRequiredPersistentTopology, hostname).Obj()
		sts.Spec.ServiceName = name
		sts.Spec.PodManagementPolicy = appsv1.ParallelPodManagement
		sts.Spec.Template.Spec.Containers[0].Name = tappContainer // what restarts counts
		Expect(k8sClient.Create(suiteCtx, sts)).To(Succeed())
		var pods map[string]*corev1.Pod
		Eventually(func(g Gomega) {
			pods = readyPods(g, ns, name)
			g.Expect(pods).To(HaveLen(3))
			for n, p := range pods {
				g.Expect(p.Status.Phase).To(Equal(corev1.PodRunning), n)
				g.Expect(p.Status.ContainerStatuses).NotTo(BeEmpty(), n)
			}
		}).WithTimeout(ppsTimeout).WithPolling(ppsPoll).Should(Succeed())
		before = uids(pods)

		By("creating the PPS as OpenKruise generates it, and writing its status as OpenKruise's controller does")
		pps := &kruisev1alpha1.PersistentPodState{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "apps/v1", Kind: "StatefulSet", Name: name, UID: sts.UID, Controller: ptr.To(true)}}},
			Spec: kruisev1alpha1.PersistentPodStateSpec{
				TargetRef:                  kruisev1alpha1.TargetReference{APIVersion: "apps/v1", Kind: "StatefulSet", Name: name},
				RequiredPersistentTopology: &kruisev1alpha1.NodeTopologyTerm{NodeTopologyKeys: []string{hostname}},
			},
		}
		Expect(k8sClient.Create(suiteCtx, pps)).To(Succeed())
		states = map[string]kruisev1alpha1.PodState{}
		for n, p := range pods {
			states[n] = kruisev1alpha1.PodState{NodeName: p.Spec.NodeName,
				NodeTopologyLabels: map[string]string{hostname: nodeLabels(Default, p.Spec.NodeName)[hostname]}}
		}
		pps.Status = kruisev1alpha1.PersistentPodStateStatus{ObservedGeneration: pps.Generation, PodStates: states}
		Expect(k8sClient.Status().Update(suiteCtx, pps)).To(Succeed())
		ppsUID = pps.UID
	})

	It("previews the switch: records kept, pods kept, nothing restarts", func() {
		reports, err := persistentpodstate.Preview(suiteCtx, k8sClient, ns, persistentpodstate.PreviewOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(reports).To(HaveLen(1))
		Expect(reports[0].Restarting()).To(BeEmpty())
		effects := map[string]preview.Effect{}
		for _, it := range reports[0].Items {
			effects[it.Object] = it.Effect
		}
		want := map[string]preview.Effect{}
		for n := range before {
			want["record "+n], want["pod "+n] = preview.Keep, preview.Keep
		}
		Expect(effects).To(Equal(want), "%+v", reports[0])
	})

	It("switches to drover with no pod deleted or restarted", func() {
		applyDroverPPSCRD() // as the guide says: kubectl apply --server-side --force-conflicts
		Expect(cluster.RestartManager(suiteCtx)).To(Succeed())
		same := func(g Gomega) {
			alpha := &kruisev1alpha1.PersistentPodState{}
			g.Expect(k8sClient.Get(suiteCtx, key(), alpha)).To(Succeed())
			g.Expect(alpha.UID).To(Equal(ppsUID))
			g.Expect(alpha.Spec.RequiredPersistentTopology.NodeTopologyKeys).To(Equal([]string{hostname}))
			g.Expect(alpha.Status.PodStates).To(Equal(states))
			hub := &kruisev1beta1.PersistentPodState{}
			g.Expect(k8sClient.Get(suiteCtx, key(), hub)).To(Succeed())
			g.Expect(hub.UID).To(Equal(ppsUID))
			g.Expect(hub.Spec.RequiredPersistentTopology.Keys).To(Equal([]string{hostname}))
			hubStates := map[string]kruisev1alpha1.PodState{}
			for n, st := range hub.Status.PodStates {
				hubStates[n] = kruisev1alpha1.PodState(st)
			}
			g.Expect(hubStates).To(Equal(states))
			g.Expect(hub.Status.ObservedGeneration).To(Equal(hub.Generation))
			g.Expect(hub.Status.Conditions).To(BeEmpty())
		}
		Eventually(same).WithTimeout(ppsTimeout).WithPolling(ppsPoll).Should(Succeed())
		Consistently(func(g Gomega) {
			same(g)
			pods := readyPods(g, ns, name)
			g.Expect(uids(pods)).To(Equal(before))
			g.Expect(restarts(pods)).To(Equal(map[string]int32{"web-0": 0, "web-1": 0, "web-2": 0}))
		}, "3s", ppsPoll).Should(Succeed())
	})

	It("steers a pod created again to its recorded node", func() {
		forceDeletePod(ns, "web-1")
		Eventually(func(g Gomega) {
			p := &corev1.Pod{}
			g.Expect(k8sClient.Get(suiteCtx, client.ObjectKey{Namespace: ns, Name: "web-1"}, p)).To(Succeed())
			g.Expect(p.UID).NotTo(Equal(before["web-1"]))
			g.Expect(p.Spec.NodeSelector).To(HaveKeyWithValue(hostname, states["web-1"].NodeName))
			g.Expect(p.Annotations).To(HaveKeyWithValue(kruisev1alpha1.AnnotationInjectedPersistentPodState, name))
			if a := p.Spec.Affinity; a != nil && a.NodeAffinity != nil {
				g.Expect(a.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution).To(BeEmpty())
			}
		}).WithTimeout(ppsTimeout).WithPolling(ppsPoll).Should(Succeed())
	})

	It("rolls back to OpenKruise 1.9 keeping every object", func() {
		Expect(cluster.RestartManager(suiteCtx, withoutPPS)).To(Succeed())
		By("making v1alpha1 the storage version of drover's CRD and storing every PPS again")
		updatePPSCRD(func(g Gomega, crd *unstructured.Unstructured) {
			versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
			for _, v := range versions {
				v.(map[string]any)["storage"] = v.(map[string]any)["name"] == "v1alpha1"
			}
			g.Expect(unstructured.SetNestedSlice(crd.Object, versions, "spec", "versions")).To(Succeed())
		})
		var list kruisev1alpha1.PersistentPodStateList
		Expect(k8sClient.List(suiteCtx, &list)).To(Succeed())
		Expect(list.Items).NotTo(BeEmpty())
		for i := range list.Items {
			Expect(k8sClient.Update(suiteCtx, &list.Items[i])).To(Succeed())
		}
		patch := []byte(`{"status":{"storedVersions":["v1alpha1"]}}`)
		Expect(k8sClient.Status().Patch(suiteCtx, getPPSCRD(Default), client.RawPatch(types.MergePatchType, patch))).To(Succeed())

		By("installing OpenKruise 1.9's CRD again")
		installKruise19PPSCRD(false)
		pps := &kruisev1alpha1.PersistentPodState{}
		Expect(k8sClient.Get(suiteCtx, key(), pps)).To(Succeed())
		Expect(pps.UID).To(Equal(ppsUID))
		Expect(pps.Status.PodStates).To(Equal(states))
		pods := readyPods(Default, ns, name)
		for _, n := range []string{"web-0", "web-2"} {
			Expect(pods).To(HaveKey(n))
			Expect(pods[n].UID).To(Equal(before[n]), n)
		}
	})
})

// getPPSCRD reads the PersistentPodState CRD.
func getPPSCRD(g Gomega) *unstructured.Unstructured {
	crd := &unstructured.Unstructured{}
	crd.SetGroupVersionKind(schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"})
	g.Expect(k8sClient.Get(suiteCtx, client.ObjectKey{Name: ppsCRDName}, crd)).To(Succeed())
	return crd
}

// installKruise19PPSCRD turns the PPS CRD into OpenKruise 1.9's: v1alpha1 served and stored, without printer
// columns, and no conversion. withV1beta1 keeps v1beta1, neither served nor stored: drover ran on this cluster
// before (the suite installs its CRD), so status.storedVersions lists v1beta1, and the API server refuses a CRD
// whose spec.versions lacks a version of status.storedVersions.
func installKruise19PPSCRD(withV1beta1 bool) {
	GinkgoHelper()
	updatePPSCRD(func(g Gomega, crd *unstructured.Unstructured) {
		versions, _, err := unstructured.NestedSlice(crd.Object, "spec", "versions")
		g.Expect(err).NotTo(HaveOccurred())
		var kept []any
		for _, v := range versions {
			v := v.(map[string]any)
			switch v["name"] {
			case "v1alpha1":
				v["served"], v["storage"] = true, true
				delete(v, "additionalPrinterColumns")
			case "v1beta1":
				if !withV1beta1 {
					continue
				}
				v["served"], v["storage"] = false, false
			}
			kept = append(kept, v)
		}
		g.Expect(unstructured.SetNestedSlice(crd.Object, kept, "spec", "versions")).To(Succeed())
		g.Expect(unstructured.SetNestedMap(crd.Object, map[string]any{"strategy": "None"}, "spec", "conversion")).To(Succeed())
	})
	Eventually(func() error {
		return k8sClient.List(suiteCtx, &kruisev1alpha1.PersistentPodStateList{})
	}).WithTimeout(ppsTimeout).WithPolling(ppsPoll).Should(Succeed())
}

// updatePPSCRD changes the PersistentPodState CRD, retrying on conflicts (the manager writes its CA into it).
func updatePPSCRD(change func(Gomega, *unstructured.Unstructured)) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		crd := getPPSCRD(g)
		change(g, crd)
		g.Expect(k8sClient.Update(suiteCtx, crd)).To(Succeed())
	}).WithTimeout(ppsTimeout).WithPolling(ppsPoll).Should(Succeed())
}

// applyDroverPPSCRD applies drover's PersistentPodState CRD over the cluster's (applyDroverCRD).
func applyDroverPPSCRD() {
	GinkgoHelper()
	applyDroverCRD("persistentpodstate", "apps.kruise.io_persistentpodstates.yaml")
}
