package e2e

import (
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kruisev1alpha1 "github.com/drover-dev/drover/api/kruise/apps/v1alpha1"
	"github.com/drover-dev/drover/internal/localcluster"
	"github.com/drover-dev/drover/internal/testutil"
)

const (
	ppsTimeout = 2 * time.Minute
	ppsPoll    = 250 * time.Millisecond
)

// ppsStatefulSet creates a StatefulSet whose annotations ask for a generated PPS; extra annotations are
// added as given (an empty value removes a default one).
func ppsStatefulSet(ns, name string, replicas int32, annotations map[string]string) *appsv1.StatefulSet {
	GinkgoHelper()
	w := testutil.MakeStatefulSet(name, ns, replicas).
		Annotation(kruisev1alpha1.AnnotationAutoGeneratePersistentPodState, "true").
		Annotation(kruisev1alpha1.AnnotationRequiredPersistentTopology, localcluster.LabelHostname).
		Annotation(kruisev1alpha1.AnnotationPreferredPersistentTopology, localcluster.LabelZone)
	for k, v := range annotations {
		w.Annotation(k, v)
		if v == "" {
			delete(w.Annotations, k)
		}
	}
	sts := w.Obj()
	sts.Spec.ServiceName = name
	sts.Spec.PodManagementPolicy = appsv1.ParallelPodManagement
	Expect(k8sClient.Create(suiteCtx, sts)).To(Succeed())
	return sts
}

// updateStatefulSet changes a StatefulSet, retrying on conflicts.
func updateStatefulSet(ns, name string, change func(*appsv1.StatefulSet)) {
	GinkgoHelper()
	Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
		sts := &appsv1.StatefulSet{}
		if err := k8sClient.Get(suiteCtx, types.NamespacedName{Namespace: ns, Name: name}, sts); err != nil {
			return err
		}
		change(sts)
		return k8sClient.Update(suiteCtx, sts)
	})).To(Succeed())
}

// getPPS reads a PersistentPodState; nil when it does not exist.
func getPPS(g Gomega, ns, name string) *kruisev1alpha1.PersistentPodState {
	pps := &kruisev1alpha1.PersistentPodState{}
	err := k8sClient.Get(suiteCtx, types.NamespacedName{Namespace: ns, Name: name}, pps)
	if apierrors.IsNotFound(err) {
		return nil
	}
	g.Expect(err).NotTo(HaveOccurred())
	return pps
}

// readyPods returns the Ready pods of a StatefulSet-like workload (label app=<name>), by name.
func readyPods(g Gomega, ns, app string) map[string]*corev1.Pod {
	var list corev1.PodList
	g.Expect(k8sClient.List(suiteCtx, &list, client.InNamespace(ns), client.MatchingLabels{"app": app})).To(Succeed())
	out := map[string]*corev1.Pod{}
	for i := range list.Items {
		p := &list.Items[i]
		if p.DeletionTimestamp == nil && podReady(p) {
			out[p.Name] = p
		}
	}
	return out
}

// nodeLabels returns the labels of a node.
func nodeLabels(g Gomega, name string) map[string]string {
	var n corev1.Node
	g.Expect(k8sClient.Get(suiteCtx, client.ObjectKey{Name: name}, &n)).To(Succeed())
	return n.Labels
}

// expectRecorded waits until the PPS holds exactly one entry per Ready pod of app (count of them), each with
// the pod's node and that node's values for keys.
func expectRecorded(ns, pps, app string, count int, keys ...string) map[string]kruisev1alpha1.PodState {
	GinkgoHelper()
	var states map[string]kruisev1alpha1.PodState
	Eventually(func(g Gomega) {
		pods := readyPods(g, ns, app)
		g.Expect(pods).To(HaveLen(count))
		p := getPPS(g, ns, pps)
		g.Expect(p).NotTo(BeNil())
		want := map[string]kruisev1alpha1.PodState{}
		for name, pod := range pods {
			labels := nodeLabels(g, pod.Spec.NodeName)
			st := kruisev1alpha1.PodState{NodeName: pod.Spec.NodeName, NodeTopologyLabels: map[string]string{}}
			for _, k := range keys {
				st.NodeTopologyLabels[k] = labels[k]
			}
			want[name] = st
		}
		got := map[string]kruisev1alpha1.PodState{}
		for name, st := range p.Status.PodStates {
			got[name] = kruisev1alpha1.PodState{NodeName: st.NodeName, NodeTopologyLabels: st.NodeTopologyLabels}
		}
		g.Expect(got).To(Equal(want))
		states = p.Status.PodStates
	}).WithTimeout(ppsTimeout).WithPolling(ppsPoll).Should(Succeed(), "PPS %s/%s records every Ready pod of %s", ns, pps, app)
	return states
}

// rolledOut waits until a StatefulSet's pods all run its update revision and are Ready.
func rolledOut(ns, name string, replicas int32) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		sts := &appsv1.StatefulSet{}
		g.Expect(k8sClient.Get(suiteCtx, types.NamespacedName{Namespace: ns, Name: name}, sts)).To(Succeed())
		g.Expect(sts.Status.ObservedGeneration).To(Equal(sts.Generation))
		g.Expect(sts.Status.UpdatedReplicas).To(Equal(replicas))
		g.Expect(sts.Status.ReadyReplicas).To(Equal(replicas))
		g.Expect(sts.Status.CurrentRevision).To(Equal(sts.Status.UpdateRevision))
	}).WithTimeout(ppsTimeout).WithPolling(ppsPoll).Should(Succeed(), "StatefulSet %s/%s rolled out", ns, name)
}

// forceDeletePod deletes a pod at once.
func forceDeletePod(ns, name string) {
	GinkgoHelper()
	pod := &corev1.Pod{}
	pod.Namespace, pod.Name = ns, name
	deleteIgnoringNotFound(pod, client.GracePeriodSeconds(0))
}

// ppsEvents lists the events regarding an object of ns by name.
func ppsEvents(g Gomega, ns, name string) []eventsv1.Event {
	var list eventsv1.EventList
	g.Expect(k8sClient.List(suiteCtx, &list, client.InNamespace(ns))).To(Succeed())
	var out []eventsv1.Event
	for _, e := range list.Items {
		if e.Regarding.Name == name {
			out = append(out, e)
		}
	}
	return out
}

// podName is <workload>-<ordinal>.
func podName(workload string, ordinal int) string { return fmt.Sprintf("%s-%d", workload, ordinal) }
