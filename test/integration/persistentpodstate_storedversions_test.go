package integration

import (
	"context"
	"slices"
	"time"

	"github.com/google/go-cmp/cmp"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kruisev1alpha1 "github.com/drover-dev/drover/api/kruise/apps/v1alpha1"
	kruisev1beta1 "github.com/drover-dev/drover/api/kruise/apps/v1beta1"
	"github.com/drover-dev/drover/internal/scheme"
)

const ppsCRDName = "persistentpodstates.apps.kruise.io"

// crdClient is a direct client that also knows CustomResourceDefinitions, which drover's scheme leaves out.
func crdClient() client.Client {
	s := scheme.New()
	Expect(apiextensionsv1.AddToScheme(s)).To(Succeed())
	c, err := client.New(cfg, client.Options{Scheme: s})
	Expect(err).NotTo(HaveOccurred())
	return c
}

// setCRDSpec replaces the spec of the PersistentPodState CRD and waits until the API server serves objects
// through it again. It returns the error of the first update the API server refuses for its content.
func setCRDSpec(ctx context.Context, spec apiextensionsv1.CustomResourceDefinitionSpec) error {
	c := crdClient()
	var refused error
	Eventually(func() error {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := c.Get(ctx, client.ObjectKey{Name: ppsCRDName}, crd); err != nil {
			return err
		}
		crd.Spec = *spec.DeepCopy()
		err := c.Update(ctx, crd)
		if apierrors.IsInvalid(err) {
			refused = err
			return nil
		}
		return err
	}).Should(Succeed())
	if refused != nil {
		return refused
	}
	for _, v := range spec.Versions {
		list := &unstructured.UnstructuredList{}
		list.SetAPIVersion(spec.Group + "/" + v.Name)
		list.SetKind("PersistentPodStateList")
		Eventually(func() error { return k8sClient.List(ctx, list, client.Limit(1)) }).Should(Succeed())
	}
	return nil
}

// openKruiseLike is the CRD of OpenKruise's main branch as far as the API server is concerned: both
// versions, v1beta1 stored, and no conversion webhook that this API server could call (OpenKruise's own
// would call its controller), without drover's short name and printer columns.
func openKruiseLike(drover *apiextensionsv1.CustomResourceDefinition) apiextensionsv1.CustomResourceDefinitionSpec {
	spec := *drover.Spec.DeepCopy()
	spec.Conversion = &apiextensionsv1.CustomResourceConversion{Strategy: apiextensionsv1.NoneConverter}
	spec.Names.ShortNames = nil
	for i := range spec.Versions {
		spec.Versions[i].AdditionalPrinterColumns = nil
	}
	return spec
}

// v1alpha1Only is the CRD drover shipped before v1beta1: v1alpha1 alone, served and stored.
func v1alpha1Only(drover *apiextensionsv1.CustomResourceDefinition) apiextensionsv1.CustomResourceDefinitionSpec {
	spec := *drover.Spec.DeepCopy()
	spec.Conversion = &apiextensionsv1.CustomResourceConversion{Strategy: apiextensionsv1.NoneConverter}
	spec.Versions = slices.DeleteFunc(spec.Versions, func(v apiextensionsv1.CustomResourceDefinitionVersion) bool {
		return v.Name != kruisev1alpha1.GroupVersion.Version
	})
	spec.Versions[0].Storage = true
	return spec
}

// An installation of OpenKruise's main branch leaves objects stored as v1beta1, and status.storedVersions
// listing v1beta1: the API server then refuses any CRD without v1beta1, as drover's was. drover's CRD now
// replaces it, and the objects are read in both versions.
var _ = Describe("PersistentPodState CRD over one that stored v1beta1", Serial, func() {
	It("replaces it and serves its objects in both versions; a v1alpha1-only CRD is refused", func() {
		ctx := context.Background()
		drover := &apiextensionsv1.CustomResourceDefinition{}
		Expect(crdClient().Get(ctx, client.ObjectKey{Name: ppsCRDName}, drover)).To(Succeed())
		DeferCleanup(func(ctx context.Context) { Expect(setCRDSpec(ctx, drover.Spec)).To(Succeed()) })

		By("installing an OpenKruise-like CRD and storing objects in v1beta1")
		Expect(setCRDSpec(ctx, openKruiseLike(drover))).To(Succeed())
		ns := ppsNamespace(ctx)
		stored := &kruisev1beta1.PersistentPodState{}
		loadOpenKruise("v1beta1", "stored-by-openkruise", ns, stored)
		records := stored.Status.PodStates
		Eventually(func() error { return k8sClient.Create(ctx, stored.DeepCopy()) }).Should(Succeed())
		Eventually(func() error {
			got := &kruisev1beta1.PersistentPodState{}
			if err := k8sClient.Get(ctx, client.ObjectKeyFromObject(stored), got); err != nil {
				return err
			}
			got.Status.PodStates = records
			return k8sClient.Status().Update(ctx, got)
		}).Should(Succeed())
		crd := &apiextensionsv1.CustomResourceDefinition{}
		Expect(crdClient().Get(ctx, client.ObjectKey{Name: ppsCRDName}, crd)).To(Succeed())
		Expect(crd.Status.StoredVersions).To(ContainElement(kruisev1beta1.GroupVersion.Version))

		By("refusing a CRD without v1beta1")
		err := setCRDSpec(ctx, v1alpha1Only(drover))
		Expect(apierrors.IsInvalid(err)).To(BeTrue(), "got %v", err)
		Expect(err.Error()).To(ContainSubstring("storedVersions"))

		By("accepting drover's CRD and reading the objects in both versions")
		Expect(setCRDSpec(ctx, drover.Spec)).To(Succeed())
		hub, spoke := bothVersions(ctx, client.ObjectKeyFromObject(stored))
		Expect(cmp.Diff(hub, spoke)).To(BeEmpty(), "the v1alpha1 read converted differs from the v1beta1 read")
		Expect(hub.Spec).To(Equal(stored.Spec))
		Expect(hub.Status.PodStates).To(Equal(records))
		alpha := &kruisev1alpha1.PersistentPodState{}
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(stored), alpha)).To(Succeed())
		Expect(alpha.Spec.RequiredPersistentTopology.NodeTopologyKeys).To(Equal(stored.Spec.RequiredPersistentTopology.Keys))
	})

	// OpenKruise up to 1.9, and drover before v1beta1, stored v1alpha1. With drover's CRD such objects stay as
	// they are stored until written again, and are converted on every read in v1beta1, the controller's.
	It("serves objects stored as v1alpha1 by an earlier installation in both versions, to the controller too", func() {
		ctx := context.Background()
		drover := &apiextensionsv1.CustomResourceDefinition{}
		Expect(crdClient().Get(ctx, client.ObjectKey{Name: ppsCRDName}, drover)).To(Succeed())
		DeferCleanup(func(ctx context.Context) { Expect(setCRDSpec(ctx, drover.Spec)).To(Succeed()) })

		By("storing an object as v1alpha1")
		alphaStored := *drover.Spec.DeepCopy()
		for i := range alphaStored.Versions {
			alphaStored.Versions[i].Storage = alphaStored.Versions[i].Name == kruisev1alpha1.GroupVersion.Version
		}
		Expect(setCRDSpec(ctx, alphaStored)).To(Succeed())
		stored := &kruisev1alpha1.PersistentPodState{}
		loadOpenKruise("v1alpha1", "stored-as-v1alpha1", ppsNamespace(ctx), stored)
		records := stored.Status.PodStates
		Eventually(func() error { return k8sClient.Create(ctx, stored.DeepCopy()) }).Should(Succeed())
		Eventually(func() error {
			got := &kruisev1alpha1.PersistentPodState{}
			if err := k8sClient.Get(ctx, client.ObjectKeyFromObject(stored), got); err != nil {
				return err
			}
			got.Status.PodStates = records
			return k8sClient.Status().Update(ctx, got)
		}).Should(Succeed())

		By("installing drover's CRD and reading the object in both versions")
		Expect(setCRDSpec(ctx, drover.Spec)).To(Succeed())
		hub, spoke := bothVersions(ctx, client.ObjectKeyFromObject(stored))
		Expect(cmp.Diff(hub, spoke)).To(BeEmpty(), "the v1alpha1 read converted differs from the v1beta1 read")
		Expect(hub.Spec).To(Equal(kruisev1alpha1.ToHub(stored).Spec))
		Expect(hub.Status.PodStates).To(Equal(kruisev1alpha1.ToHub(stored).Status.PodStates))
		// The controller reads it in v1beta1: its target kind is not served, which it reports.
		Eventually(func() []string {
			got := &kruisev1beta1.PersistentPodState{}
			Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(stored), got)).To(Succeed())
			var reasons []string
			for _, c := range got.Status.Conditions {
				reasons = append(reasons, c.Type+"/"+c.Reason)
			}
			return reasons
		}).Should(ConsistOf(kruisev1beta1.ConditionTargetUnavailable + "/KindNotServed"))
	})

	// The way back to OpenKruise 1.9 the user guide describes: store v1alpha1, rewrite every object, drop
	// v1beta1 from storedVersions; then a CRD without v1beta1 is accepted.
	It("accepts a v1alpha1-only CRD again once nothing is stored as v1beta1", func() {
		ctx := context.Background()
		c := crdClient()
		drover := &apiextensionsv1.CustomResourceDefinition{}
		Expect(c.Get(ctx, client.ObjectKey{Name: ppsCRDName}, drover)).To(Succeed())
		DeferCleanup(func(ctx context.Context) {
			Expect(setCRDSpec(ctx, drover.Spec)).To(Succeed())
			waitControllerSees(ctx)
		})
		stored := &kruisev1beta1.PersistentPodState{}
		loadOpenKruise("v1beta1", "going-back", ppsNamespace(ctx), stored)
		Eventually(func() error { return k8sClient.Create(ctx, stored.DeepCopy()) }).Should(Succeed())

		By("storing v1alpha1 and rewriting every object")
		alphaStored := *drover.Spec.DeepCopy()
		for i := range alphaStored.Versions {
			alphaStored.Versions[i].Storage = alphaStored.Versions[i].Name == kruisev1alpha1.GroupVersion.Version
		}
		Expect(setCRDSpec(ctx, alphaStored)).To(Succeed())
		Eventually(func() error {
			list := &kruisev1alpha1.PersistentPodStateList{}
			if err := k8sClient.List(ctx, list); err != nil {
				return err
			}
			for i := range list.Items {
				if err := k8sClient.Update(ctx, &list.Items[i]); err != nil {
					return err
				}
			}
			return nil
		}).Should(Succeed())

		By("dropping v1beta1 from storedVersions and installing a CRD without it")
		Eventually(func() error {
			crd := &apiextensionsv1.CustomResourceDefinition{}
			if err := c.Get(ctx, client.ObjectKey{Name: ppsCRDName}, crd); err != nil {
				return err
			}
			crd.Status.StoredVersions = []string{kruisev1alpha1.GroupVersion.Version}
			return c.Status().Update(ctx, crd)
		}).Should(Succeed())
		Expect(setCRDSpec(ctx, v1alpha1Only(drover))).To(Succeed())
		got := &kruisev1alpha1.PersistentPodState{}
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(stored), got)).To(Succeed())
		Expect(kruisev1alpha1.ToHub(got).Spec).To(Equal(stored.Spec))
	})
})

// waitControllerSees waits until the controller records a new object, after the CRD changed under its
// informer: the specs that follow read through the manager's cache.
func waitControllerSees(ctx context.Context) {
	pps := &kruisev1beta1.PersistentPodState{}
	loadOpenKruise("v1beta1", "informer-back", ppsNamespace(ctx), pps)
	pps.Status = kruisev1beta1.PersistentPodStateStatus{}
	Eventually(func() error { return k8sClient.Create(ctx, pps) }).Should(Succeed())
	Eventually(func() []metav1.Condition {
		got := &kruisev1beta1.PersistentPodState{}
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(pps), got)).To(Succeed())
		return got.Status.Conditions
	}, time.Minute).ShouldNot(BeEmpty())
}
