package integration

import (
	"context"
	"os"
	"path/filepath"

	"github.com/google/go-cmp/cmp"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	kruisev1alpha1 "github.com/drover-dev/drover/api/kruise/apps/v1alpha1"
	kruisev1beta1 "github.com/drover-dev/drover/api/kruise/apps/v1beta1"
)

// loadOpenKruise decodes OpenKruise's example of a version (testdata of its API package) into into, without
// its status, renamed name, in namespace ns. The example targets an Advanced StatefulSet, whose CRD this API
// server does not serve: the controller leaves the records alone and only adds TargetUnavailable.
func loadOpenKruise(version, name, ns string, into client.Object) {
	raw, err := os.ReadFile(filepath.Join(repoRoot(), "api", "kruise", "apps", version, "testdata", "openkruise-persistentpodstate.yaml"))
	Expect(err).NotTo(HaveOccurred())
	Expect(yaml.UnmarshalStrict(raw, into)).To(Succeed())
	into.SetName(name)
	into.SetNamespace(ns)
}

// bothVersions reads the object named key in v1alpha1 and in v1beta1 at the same resourceVersion (the
// controller may write between two reads) and returns the v1beta1 one and the v1alpha1 one converted.
func bothVersions(ctx context.Context, key client.ObjectKey) (*kruisev1beta1.PersistentPodState, *kruisev1beta1.PersistentPodState) {
	var hub, spoke *kruisev1beta1.PersistentPodState
	Eventually(func(g Gomega) {
		h, s := &kruisev1beta1.PersistentPodState{}, &kruisev1alpha1.PersistentPodState{}
		g.Expect(k8sClient.Get(ctx, key, h)).To(Succeed())
		g.Expect(k8sClient.Get(ctx, key, s)).To(Succeed())
		g.Expect(s.ResourceVersion).To(Equal(h.ResourceVersion))
		// The typed client leaves the kind out of what it reads; the conversion sets it.
		h.SetGroupVersionKind(kruisev1beta1.GroupVersion.WithKind("PersistentPodState"))
		hub, spoke = h, kruisev1alpha1.ToHub(s)
	}).Should(Succeed())
	return hub, spoke
}

// Both versions of PersistentPodState on a real API server: drover's CRD stores v1beta1 and converts
// through the manager's conversion webhook.
var _ = Describe("PersistentPodState versions", func() {
	var ctx context.Context
	var ns string
	BeforeEach(func() {
		ctx = context.Background()
		ns = ppsNamespace(ctx)
	})

	It("serves an object written in either version in both, with the same content", func() {
		alpha := &kruisev1alpha1.PersistentPodState{}
		loadOpenKruise("v1alpha1", "written-in-v1alpha1", ns, alpha)
		beta := &kruisev1beta1.PersistentPodState{}
		loadOpenKruise("v1beta1", "written-in-v1beta1", ns, beta)
		// The two examples are one object in two versions.
		Expect(kruisev1alpha1.ToHub(alpha).Spec).To(Equal(beta.Spec))

		records := kruisev1alpha1.ToHub(alpha).Status.PodStates
		for _, obj := range []client.Object{alpha, beta} {
			obj.SetNamespace(ppsNamespace(ctx)) // one object per workload and namespace
			written := obj.DeepCopyObject().(client.Object)
			Expect(k8sClient.Create(ctx, written)).To(Succeed())
			// The status as OpenKruise writes it, through the subresource, in the version of the object.
			Eventually(func() error {
				switch o := obj.(type) {
				case *kruisev1alpha1.PersistentPodState:
					got := &kruisev1alpha1.PersistentPodState{}
					if err := k8sClient.Get(ctx, client.ObjectKeyFromObject(o), got); err != nil {
						return err
					}
					got.Status.PodStates = o.Status.PodStates
					return k8sClient.Status().Update(ctx, got)
				case *kruisev1beta1.PersistentPodState:
					got := &kruisev1beta1.PersistentPodState{}
					if err := k8sClient.Get(ctx, client.ObjectKeyFromObject(o), got); err != nil {
						return err
					}
					got.Status.PodStates = o.Status.PodStates
					return k8sClient.Status().Update(ctx, got)
				}
				return nil
			}).Should(Succeed())

			hub, spoke := bothVersions(ctx, client.ObjectKeyFromObject(obj))
			Expect(cmp.Diff(hub, spoke)).To(BeEmpty(), "the v1alpha1 read converted differs from the v1beta1 read")
			Expect(hub.Spec).To(Equal(beta.Spec))
			Expect(hub.Status.PodStates).To(Equal(records))
		}
	})

	It("keeps an edit made in v1alpha1 and reads it in v1beta1", func() {
		beta := &kruisev1beta1.PersistentPodState{}
		loadOpenKruise("v1beta1", "edited-in-v1alpha1", ns, beta)
		beta.Status = kruisev1beta1.PersistentPodStateStatus{}
		Expect(k8sClient.Create(ctx, beta)).To(Succeed())
		Eventually(func() error {
			alpha := &kruisev1alpha1.PersistentPodState{}
			if err := k8sClient.Get(ctx, client.ObjectKeyFromObject(beta), alpha); err != nil {
				return err
			}
			alpha.Spec.RequiredPersistentTopology.NodeTopologyKeys = []string{labelZone, labelHostname}
			alpha.Spec.PersistentPodStateRetentionPolicy = kruisev1alpha1.RetainWhenScaled
			return k8sClient.Update(ctx, alpha)
		}).Should(Succeed())
		hub, spoke := bothVersions(ctx, client.ObjectKeyFromObject(beta))
		Expect(cmp.Diff(hub, spoke)).To(BeEmpty(), "the v1alpha1 read converted differs from the v1beta1 read")
		Expect(hub.Spec.RequiredPersistentTopology.Keys).To(Equal([]string{labelZone, labelHostname}))
		Expect(hub.Spec.PersistentPodStateRetentionPolicy).To(Equal(kruisev1beta1.RetainWhenScaled))
		Expect(hub.Spec.PreferredPersistentTopology).To(Equal(beta.Spec.PreferredPersistentTopology))
	})

	It("names the fields of the version a refused object was sent in", func() {
		alpha := &kruisev1alpha1.PersistentPodState{}
		loadOpenKruise("v1alpha1", "bad-key", ns, alpha)
		alpha.Status = kruisev1alpha1.PersistentPodStateStatus{}
		alpha.Spec.RequiredPersistentTopology.NodeTopologyKeys = []string{"bad key"}
		err := k8sClient.Create(ctx, alpha)
		Expect(apierrors.IsInvalid(err)).To(BeTrue(), "got %v", err)
		Expect(causeFields(err)).To(ConsistOf("spec.requiredPersistentTopology.nodeTopologyKeys[0]"))

		beta := &kruisev1beta1.PersistentPodState{}
		loadOpenKruise("v1beta1", "bad-key", ns, beta)
		beta.Status = kruisev1beta1.PersistentPodStateStatus{}
		beta.Spec.RequiredPersistentTopology.Keys = []string{"bad key"}
		err = k8sClient.Create(ctx, beta)
		Expect(apierrors.IsInvalid(err)).To(BeTrue(), "got %v", err)
		Expect(causeFields(err)).To(ConsistOf("spec.requiredPersistentTopology.keys[0]"))
	})

	It("answers a value of the wrong type sent in v1alpha1 with a 422 naming it", func() {
		u := &unstructured.Unstructured{}
		loadOpenKruise("v1alpha1", "wrong-type", ns, u)
		Expect(unstructured.SetNestedSlice(u.Object, []any{int64(7)}, "spec", "requiredPersistentTopology", "nodeTopologyKeys")).To(Succeed())
		unstructured.RemoveNestedField(u.Object, "status")
		err := k8sClient.Create(ctx, u)
		Expect(apierrors.IsInvalid(err)).To(BeTrue(), "got %v", err)
		Expect(causeFields(err)).To(ContainElement(HavePrefix("spec.requiredPersistentTopology.nodeTopologyKeys")))
	})
})
