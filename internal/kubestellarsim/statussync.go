package kubestellarsim

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	controlv1alpha1 "github.com/drover-dev/drover/api/kubestellar/control/v1alpha1"
)

// String names the key in logs.
func (k statusKey) String() string {
	if k.obj == (ObjectRef{}) {
		return k.binding + " (all objects)"
	}
	return k.binding + ": " + k.obj.String()
}

// syncStatus handles one statusKey. For a sweep it queues every object that has, or should have, a
// CombinedStatus of the Binding; for an object it writes or deletes that object's CombinedStatus. The
// duration returned is when a held-back automatic status becomes due.
func (s *Sim) syncStatus(ctx context.Context, key statusKey) (time.Duration, error) {
	if key.obj == (ObjectRef{}) {
		return 0, s.sweep(ctx, key.binding)
	}
	desired, wait, err := s.desiredCombinedStatus(ctx, key)
	if err != nil {
		return 0, err
	}
	var existing controlv1alpha1.CombinedStatusList
	if err := s.client.List(ctx, &existing, client.MatchingFields{indexCSObject: objectIndexValue(key.binding, key.obj)}); err != nil {
		return 0, fmt.Errorf("listing the CombinedStatuses of %s: %w", key, err)
	}
	var current *controlv1alpha1.CombinedStatus
	for i := range existing.Items {
		cs := &existing.Items[i]
		if desired != nil && cs.Namespace == desired.Namespace && cs.Name == desired.Name {
			current = cs
			continue
		}
		if err := s.client.Delete(ctx, cs, client.Preconditions{UID: &cs.UID}); err != nil && !apierrors.IsNotFound(err) {
			return 0, fmt.Errorf("deleting CombinedStatus %s: %w", klog.KObj(cs), err)
		}
		s.log.V(1).Info("Deleted CombinedStatus", "combinedStatus", klog.KObj(cs))
	}
	if desired == nil {
		return wait, nil
	}
	return wait, s.writeCombinedStatus(ctx, current, desired)
}

// sweep queues the objects of every CombinedStatus labelled with the Binding and of every Binding entry with
// a collector.
func (s *Sim) sweep(ctx context.Context, binding string) error {
	var existing controlv1alpha1.CombinedStatusList
	if err := s.client.List(ctx, &existing, client.MatchingFields{indexCSBinding: binding}); err != nil {
		return fmt.Errorf("listing the CombinedStatuses of %s: %w", binding, err)
	}
	for i := range existing.Items {
		if _, ref, ok := refFromLabels(existing.Items[i].Labels); ok {
			s.statusQ.Add(statusKey{binding: binding, obj: ref})
		}
	}
	b := &controlv1alpha1.Binding{}
	if err := s.client.Get(ctx, client.ObjectKey{Name: binding}, b); err != nil {
		return client.IgnoreNotFound(err)
	}
	for _, e := range bindingEntries(&b.Spec) {
		if len(e.Modulation.StatusCollectors) > 0 {
			s.statusQ.Add(statusKey{binding: binding, obj: e.Ref})
		}
	}
	return nil
}

// desiredCombinedStatus computes the CombinedStatus an object should have for a Binding, or nil when it
// should have none: the Binding or its policy is gone or going, the object is not in the Binding, has no
// collector or does not exist.
func (s *Sim) desiredCombinedStatus(ctx context.Context, key statusKey) (*controlv1alpha1.CombinedStatus, time.Duration, error) {
	b := &controlv1alpha1.Binding{}
	if err := s.client.Get(ctx, client.ObjectKey{Name: key.binding}, b); err != nil {
		return nil, 0, client.IgnoreNotFound(err)
	}
	owner := metav1.GetControllerOf(b)
	if owner == nil || owner.Kind != "BindingPolicy" || !b.DeletionTimestamp.IsZero() {
		return nil, 0, nil
	}
	bp := &controlv1alpha1.BindingPolicy{}
	if err := s.client.Get(ctx, client.ObjectKey{Name: key.binding}, bp); err != nil {
		return nil, 0, client.IgnoreNotFound(err)
	}
	if bp.UID != owner.UID || !bp.DeletionTimestamp.IsZero() {
		return nil, 0, nil
	}
	entry, ok := findEntry(&b.Spec, key.obj)
	if !ok || len(entry.Modulation.StatusCollectors) == 0 {
		return nil, 0, nil
	}
	obj, err := s.getObject(ctx, key.obj)
	if err != nil || obj == nil {
		return nil, 0, err
	}
	reports, wait, err := s.reports(b, key.obj, obj)
	if err != nil {
		return nil, 0, err
	}
	results, err := s.results(ctx, entry.Modulation.StatusCollectors, obj, reports)
	if err != nil {
		return nil, 0, err
	}
	return newCombinedStatus(key.binding, owner.UID, key.obj, obj, results), wait, nil
}

// getObject reads a workload object from the cache; nil when it does not exist or is not watched.
func (s *Sim) getObject(ctx context.Context, ref ObjectRef) (*unstructured.Unstructured, error) {
	w, ok := s.byGR[groupResource(ref)]
	if !ok {
		return nil, nil
	}
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(w.gvk)
	if err := s.client.Get(ctx, client.ObjectKey{Namespace: ref.Namespace, Name: ref.Name}, obj); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("reading %s: %w", ref, err)
	}
	return obj, nil
}

// results evaluates every named collector that exists and is valid, in name order (names are sorted in a
// Binding entry).
func (s *Sim) results(ctx context.Context, names []string, obj *unstructured.Unstructured,
	reports []clusterReport) ([]controlv1alpha1.NamedStatusCombination, error) {
	content := withoutStatus(obj.Object)
	var out []controlv1alpha1.NamedStatusCombination
	for _, name := range names {
		sc := &controlv1alpha1.StatusCollector{}
		if err := s.client.Get(ctx, client.ObjectKey{Name: name}, sc); err != nil {
			if apierrors.IsNotFound(err) {
				continue
			}
			return nil, fmt.Errorf("reading StatusCollector %s: %w", name, err)
		}
		compiled, _ := s.collectors.get(sc)
		if compiled == nil {
			continue
		}
		out = append(out, combine(compiled, content, reports))
	}
	return out, nil
}

// writeCombinedStatus creates the CombinedStatus, or updates the whole object when its labels or results
// differ.
func (s *Sim) writeCombinedStatus(ctx context.Context, current, desired *controlv1alpha1.CombinedStatus) error {
	if current == nil {
		err := s.client.Create(ctx, desired)
		if apierrors.IsNotFound(err) && desired.Namespace == controlv1alpha1.ReportNamespace {
			if nsErr := s.ensureReportNamespace(ctx); nsErr != nil {
				return nsErr
			}
			err = s.client.Create(ctx, desired)
		}
		if err != nil {
			return fmt.Errorf("creating CombinedStatus %s: %w", klog.KObj(desired), err)
		}
		s.log.V(1).Info("Created CombinedStatus", "combinedStatus", klog.KObj(desired))
		return nil
	}
	if combinedStatusUpToDate(current, desired) {
		return nil
	}
	updated := current.DeepCopy()
	updated.Labels = desired.Labels
	updated.OwnerReferences = desired.OwnerReferences
	updated.Results = desired.Results
	if err := s.client.Update(ctx, updated); err != nil {
		return fmt.Errorf("updating CombinedStatus %s: %w", klog.KObj(updated), err)
	}
	s.log.V(1).Info("Updated CombinedStatus", "combinedStatus", klog.KObj(updated))
	return nil
}

func groupResource(ref ObjectRef) schema.GroupResource {
	return schema.GroupResource{Group: ref.Group, Resource: ref.Resource}
}
