package kubestellarsim

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	controlv1alpha1 "github.com/drover-dev/drover/api/kubestellar/control/v1alpha1"
	"github.com/drover-dev/drover/internal/kit"
)

// syncPolicy brings the Binding of one BindingPolicy, the Binding's status and the policy's status in line
// with the policy, the inventory and the workload objects, writing only what differs.
func (s *Sim) syncPolicy(ctx context.Context, name string) error {
	bp := &controlv1alpha1.BindingPolicy{}
	if err := s.client.Get(ctx, client.ObjectKey{Name: name}, bp); err != nil {
		if apierrors.IsNotFound(err) {
			// KubeStellar leaves the Binding of a policy that is gone to the garbage collector.
			return s.deleteCombinedStatuses(ctx, name)
		}
		return fmt.Errorf("reading BindingPolicy %s: %w", name, err)
	}
	if !bp.DeletionTimestamp.IsZero() {
		return s.finalizePolicy(ctx, bp)
	}
	if !controllerutil.ContainsFinalizer(bp, controlv1alpha1.FinalizerBindingPolicy) {
		controllerutil.AddFinalizer(bp, controlv1alpha1.FinalizerBindingPolicy)
		if err := s.client.Update(ctx, bp); err != nil {
			return fmt.Errorf("adding the finalizer to BindingPolicy %s: %w", name, err)
		}
	}
	spec, err := s.resolve(ctx, bp)
	if err != nil {
		return err
	}
	binding, err := s.writeBinding(ctx, bp, spec)
	if err != nil {
		return err
	}
	if binding, err = s.writeBindingStatus(ctx, binding); err != nil {
		return err
	}
	return s.writePolicyStatus(ctx, bp, binding)
}

// resolve reads the inventory, the namespaces and the workload objects from the cache and computes the
// policy's Binding spec. The lists share the cache's objects (no deep copy): nothing here modifies them.
func (s *Sim) resolve(ctx context.Context, bp *controlv1alpha1.BindingPolicy) (controlv1alpha1.BindingSpec, error) {
	clusters, err := s.listClusters(ctx)
	if err != nil {
		return controlv1alpha1.BindingSpec{}, err
	}
	namespaces, err := s.listNamespaces(ctx)
	if err != nil {
		return controlv1alpha1.BindingSpec{}, err
	}
	objects, err := s.listObjects(ctx)
	if err != nil {
		return controlv1alpha1.BindingSpec{}, err
	}
	return resolveBinding(&bp.Spec, clusters, objects, namespaces), nil
}

func (s *Sim) listClusters(ctx context.Context) ([]clusterInfo, error) {
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(ManagedClusterGVK.GroupVersion().WithKind(ManagedClusterGVK.Kind + "List"))
	if err := s.client.List(ctx, list, client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("listing ManagedClusters: %w", err)
	}
	out := make([]clusterInfo, 0, len(list.Items))
	for i := range list.Items {
		out = append(out, clusterInfo{Name: list.Items[i].GetName(), Labels: list.Items[i].GetLabels()})
	}
	return out, nil
}

func (s *Sim) listNamespaces(ctx context.Context) (namespaceLabels, error) {
	var list corev1.NamespaceList
	if err := s.client.List(ctx, &list, client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("listing Namespaces: %w", err)
	}
	out := make(namespaceLabels, len(list.Items))
	for i := range list.Items {
		labels := list.Items[i].Labels
		if labels == nil {
			labels = map[string]string{}
		}
		out[list.Items[i].Name] = labels
	}
	return out, nil
}

// listObjects lists the objects of every watched resource.
func (s *Sim) listObjects(ctx context.Context) ([]objectInfo, error) {
	var out []objectInfo
	for _, w := range s.resources {
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(w.gvk.GroupVersion().WithKind(w.gvk.Kind + "List"))
		if err := s.client.List(ctx, list, client.UnsafeDisableDeepCopy); err != nil {
			return nil, fmt.Errorf("listing %s: %w", w.gvr, err)
		}
		for i := range list.Items {
			o := &list.Items[i]
			out = append(out, objectInfo{
				ObjectRef: ObjectRef{
					Group: w.gvr.Group, Resource: w.gvr.Resource, Namespace: o.GetNamespace(), Name: o.GetName(),
				},
				Version: w.preferred, Namespaced: w.namespaced, Labels: o.GetLabels(),
				ResourceVersion: o.GetResourceVersion(),
			})
		}
	}
	return out, nil
}

// writeBinding creates or updates (full Update) the policy's Binding when its spec or owner differ.
func (s *Sim) writeBinding(ctx context.Context, bp *controlv1alpha1.BindingPolicy,
	spec controlv1alpha1.BindingSpec) (*controlv1alpha1.Binding, error) {
	owner := bindingOwner(bp)
	stored := &controlv1alpha1.Binding{}
	err := s.client.Get(ctx, client.ObjectKey{Name: bp.Name}, stored)
	switch {
	case apierrors.IsNotFound(err):
		b := &controlv1alpha1.Binding{
			ObjectMeta: metav1.ObjectMeta{Name: bp.Name, OwnerReferences: []metav1.OwnerReference{owner}},
			Spec:       spec,
		}
		if err := s.client.Create(ctx, b); err != nil {
			return nil, fmt.Errorf("creating Binding %s: %w", bp.Name, err)
		}
		s.log.V(1).Info("Created Binding", "binding", klog.KObj(b), "destinations", len(spec.Destinations))
		return b, nil
	case err != nil:
		return nil, fmt.Errorf("reading Binding %s: %w", bp.Name, err)
	case bindingUpToDate(stored, &spec, owner):
		return stored, nil
	}
	b := stored.DeepCopy()
	b.Spec = spec
	b.OwnerReferences = []metav1.OwnerReference{owner}
	if err := s.client.Update(ctx, b); err != nil {
		return nil, fmt.Errorf("updating Binding %s: %w", bp.Name, err)
	}
	s.log.V(1).Info("Updated Binding", "binding", klog.KObj(b), "destinations", len(spec.Destinations))
	return b, nil
}

// writeBindingStatus sets StatusCollectorsAvailable and observedGeneration on the Binding.
func (s *Sim) writeBindingStatus(ctx context.Context, b *controlv1alpha1.Binding) (*controlv1alpha1.Binding, error) {
	missing, err := s.missingCollectors(ctx, referencedCollectors(&b.Spec))
	if err != nil {
		return nil, err
	}
	status := desiredBindingStatus(b, missing, metav1.NewTime(s.cfg.Now()))
	wrote, err := kit.WriteStatus(ctx, s.client, b, bindingStatus, &status, nil)
	if err != nil || !wrote {
		return b, err // a Binding deleted meanwhile is no error: its deletion queues the policy again
	}
	written := *b
	written.Status = status
	return &written, nil
}

func bindingStatus(b *controlv1alpha1.Binding) *controlv1alpha1.BindingStatus { return &b.Status }

// missingCollectors returns the names among names of collectors that do not exist or are not valid.
func (s *Sim) missingCollectors(ctx context.Context, names []string) ([]string, error) {
	var missing []string
	for _, name := range names {
		sc := &controlv1alpha1.StatusCollector{}
		err := s.client.Get(ctx, client.ObjectKey{Name: name}, sc)
		switch {
		case apierrors.IsNotFound(err):
			missing = append(missing, name)
		case err != nil:
			return nil, fmt.Errorf("reading StatusCollector %s: %w", name, err)
		default:
			if compiled, errs := s.collectors.get(sc); compiled == nil {
				s.log.V(1).Info("StatusCollector is not valid", "statusCollector", name, "errors", errs)
				missing = append(missing, name)
			}
		}
	}
	return missing, nil
}

// writePolicyStatus records the policy's generation as observed and copies the Binding's conditions.
func (s *Sim) writePolicyStatus(ctx context.Context, bp *controlv1alpha1.BindingPolicy, b *controlv1alpha1.Binding) error {
	status := desiredPolicyStatus(bp, b)
	_, err := kit.WriteStatus(ctx, s.client, bp, policyStatus, &status, nil)
	return err
}

func policyStatus(bp *controlv1alpha1.BindingPolicy) *controlv1alpha1.BindingPolicyStatus {
	return &bp.Status
}

// finalizePolicy removes the finalizer of a deleted policy. As in KubeStellar, the Binding is not deleted:
// the garbage collector removes it through its owner reference once the policy is gone (where no garbage
// collector runs, it stays). The CombinedStatuses of the policy go, since it is being deleted.
func (s *Sim) finalizePolicy(ctx context.Context, bp *controlv1alpha1.BindingPolicy) error {
	if !controllerutil.ContainsFinalizer(bp, controlv1alpha1.FinalizerBindingPolicy) {
		return nil
	}
	if err := s.deleteCombinedStatuses(ctx, bp.Name); err != nil {
		return err
	}
	controllerutil.RemoveFinalizer(bp, controlv1alpha1.FinalizerBindingPolicy)
	if err := s.client.Update(ctx, bp); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("removing the finalizer of BindingPolicy %s: %w", bp.Name, err)
	}
	s.log.V(1).Info("Finalized BindingPolicy", "bindingPolicy", klog.KObj(bp))
	return nil
}

// deleteCombinedStatuses deletes every CombinedStatus labelled with a policy's name, listed from the API
// server so that none written a moment ago is missed.
func (s *Sim) deleteCombinedStatuses(ctx context.Context, name string) error {
	var list controlv1alpha1.CombinedStatusList
	err := s.apiReader.List(ctx, &list, client.MatchingLabels{controlv1alpha1.LabelCombinedStatusBindingPolicy: name})
	if err != nil {
		return fmt.Errorf("listing the CombinedStatuses of %s: %w", name, err)
	}
	for i := range list.Items {
		if err := s.client.Delete(ctx, &list.Items[i]); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting CombinedStatus %s: %w", klog.KObj(&list.Items[i]), err)
		}
	}
	return nil
}
