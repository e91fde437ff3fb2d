package kubestellarsim

import (
	"context"
	"fmt"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	controlv1alpha1 "github.com/drover-dev/drover/api/kubestellar/control/v1alpha1"
	"github.com/drover-dev/drover/internal/index"
)

// Cache indexes of CombinedStatuses, from their labels.
const (
	indexCSBinding = "kssim.binding" // the BindingPolicy (and Binding) name
	indexCSObject  = "kssim.object"  // the BindingPolicy name and the object
)

func objectIndexValue(binding string, ref ObjectRef) string {
	return binding + "\x00" + ref.Group + "\x00" + ref.Resource + "\x00" + ref.Namespace + "\x00" + ref.Name
}

func (s *Sim) addIndexes(ctx context.Context) error {
	return index.Register(ctx, s.cache, combinedStatusIndexes())
}

// combinedStatusIndexes are the cache indexes of CombinedStatuses: by BindingPolicy, and by BindingPolicy and
// object.
func combinedStatusIndexes() []index.Index {
	byBinding := func(o client.Object) []string {
		if v, ok := o.GetLabels()[controlv1alpha1.LabelCombinedStatusBindingPolicy]; ok {
			return []string{v}
		}
		return nil
	}
	byObject := func(o client.Object) []string {
		if b, ref, ok := refFromLabels(o.GetLabels()); ok {
			return []string{objectIndexValue(b, ref)}
		}
		return nil
	}
	return []index.Index{
		{Object: &controlv1alpha1.CombinedStatus{}, Field: indexCSBinding, Extract: byBinding},
		{Object: &controlv1alpha1.CombinedStatus{}, Field: indexCSObject, Extract: byObject},
	}
}

// handler turns typed callbacks into an informer event handler; a nil callback ignores that event.
type handler struct {
	add    func(client.Object)
	update func(oldObj, newObj client.Object)
	del    func(client.Object)
}

func (h handler) funcs() toolscache.ResourceEventHandlerFuncs {
	return toolscache.ResourceEventHandlerFuncs{
		AddFunc: func(o any) {
			if obj, ok := asObject(o); ok && h.add != nil {
				h.add(obj)
			}
		},
		UpdateFunc: func(o, n any) {
			oldObj, ok1 := asObject(o)
			newObj, ok2 := asObject(n)
			if ok1 && ok2 && h.update != nil {
				h.update(oldObj, newObj)
			}
		},
		DeleteFunc: func(o any) {
			if obj, ok := asObject(o); ok && h.del != nil {
				h.del(obj)
			}
		},
	}
}

func asObject(o any) (client.Object, bool) {
	if tomb, ok := o.(toolscache.DeletedFinalStateUnknown); ok {
		o = tomb.Obj
	}
	obj, ok := o.(client.Object)
	return obj, ok
}

// addEventHandlers wires every informer to the two queues.
func (s *Sim) addEventHandlers(ctx context.Context) error {
	cluster := &unstructured.Unstructured{}
	cluster.SetGroupVersionKind(ManagedClusterGVK)
	onLabels := func(o, n client.Object) {
		if !maps.Equal(o.GetLabels(), n.GetLabels()) {
			s.enqueueAllPolicies()
		}
	}
	all := func(client.Object) { s.enqueueAllPolicies() }
	handlers := map[client.Object]handler{
		&controlv1alpha1.BindingPolicy{}:   s.policyHandler(),
		&controlv1alpha1.Binding{}:         s.bindingHandler(),
		&controlv1alpha1.CombinedStatus{}:  s.combinedStatusHandler(),
		&controlv1alpha1.StatusCollector{}: s.collectorHandler(),
		&corev1.Namespace{}:                {add: all, update: onLabels, del: all},
		cluster:                            {add: all, update: onLabels, del: all},
	}
	for _, w := range s.resources {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(w.gvk)
		handlers[u] = s.workloadHandler()
	}
	for obj, h := range handlers {
		informer, err := s.cache.GetInformer(ctx, obj)
		if err != nil {
			return fmt.Errorf("watching %T %s: %w", obj, obj.GetObjectKind().GroupVersionKind(), err)
		}
		if _, err := informer.AddEventHandler(h.funcs()); err != nil {
			return fmt.Errorf("handling events of %T: %w", obj, err)
		}
	}
	return nil
}

func (s *Sim) policyHandler() handler {
	enqueue := func(o client.Object) { s.enqueuePolicy(o.GetName()) }
	return handler{
		add: enqueue,
		del: enqueue,
		// The policy's own status writes are not a reason to look again.
		update: func(o, n client.Object) {
			if o.GetGeneration() != n.GetGeneration() || o.GetUID() != n.GetUID() ||
				!o.GetDeletionTimestamp().Equal(n.GetDeletionTimestamp()) ||
				!slices.Equal(o.GetFinalizers(), n.GetFinalizers()) {
				s.enqueuePolicy(n.GetName())
			}
		},
	}
}

func (s *Sim) bindingHandler() handler {
	addOrDelete := func(o client.Object) {
		s.enqueuePolicy(o.GetName())
		s.enqueueStatus(statusKey{binding: o.GetName()})
	}
	return handler{
		add: addOrDelete,
		del: addOrDelete,
		update: func(o, n client.Object) {
			oldB, ok1 := o.(*controlv1alpha1.Binding)
			newB, ok2 := n.(*controlv1alpha1.Binding)
			if !ok1 || !ok2 {
				return
			}
			if !equality.Semantic.DeepEqual(oldB.Spec, newB.Spec) ||
				!equality.Semantic.DeepEqual(oldB.OwnerReferences, newB.OwnerReferences) {
				s.enqueuePolicy(n.GetName()) // reverts an edit by someone else
			}
			refs, sweep := bindingStatusWork(oldB, newB)
			if sweep {
				s.enqueueStatus(statusKey{binding: n.GetName()})
			}
			for _, ref := range refs {
				s.enqueueStatus(statusKey{binding: n.GetName(), obj: ref})
			}
		},
	}
}

// bindingStatusWork returns the objects whose CombinedStatus a Binding update may change, and whether every
// CombinedStatus of the Binding must be looked at (new owner or new destinations).
func bindingStatusWork(oldB, newB *controlv1alpha1.Binding) ([]ObjectRef, bool) {
	oldEntries, newEntries := entryMap(&oldB.Spec), entryMap(&newB.Spec)
	if !equality.Semantic.DeepEqual(oldB.OwnerReferences, newB.OwnerReferences) ||
		!equality.Semantic.DeepEqual(oldB.Spec.Destinations, newB.Spec.Destinations) {
		return slices.Collect(maps.Keys(newEntries)), true
	}
	var refs []ObjectRef
	for ref, e := range newEntries {
		if old, ok := oldEntries[ref]; !ok || !equality.Semantic.DeepEqual(old, e) {
			refs = append(refs, ref)
		}
	}
	for ref := range oldEntries {
		if _, ok := newEntries[ref]; !ok {
			refs = append(refs, ref)
		}
	}
	return refs, false
}

// combinedStatusHandler repairs a CombinedStatus deleted or relabelled by someone else and removes strays
// created after their Binding went. (A change of results by someone else is repaired on the next change of
// the object's inputs.)
func (s *Sim) combinedStatusHandler() handler {
	enqueue := func(o client.Object) {
		if binding, ref, ok := refFromLabels(o.GetLabels()); ok {
			s.enqueueStatus(statusKey{binding: binding, obj: ref})
		}
	}
	return handler{
		add: enqueue,
		del: enqueue,
		update: func(o, n client.Object) {
			if !maps.Equal(o.GetLabels(), n.GetLabels()) {
				enqueue(o)
				enqueue(n)
			}
		},
	}
}

func (s *Sim) collectorHandler() handler {
	changed := func(o client.Object) {
		s.enqueueAllPolicies()
		s.enqueueObjectsUsing(o.GetName())
	}
	return handler{
		add: changed,
		update: func(o, n client.Object) {
			if o.GetGeneration() != n.GetGeneration() || o.GetUID() != n.GetUID() {
				changed(n)
			}
		},
		del: func(o client.Object) {
			s.collectors.forget(o.GetName())
			changed(o)
		},
	}
}

// workloadHandler queues every policy on any change of a workload object. A changed object in a Binding
// needs no CombinedStatus work queued here: its Binding entry records its resourceVersion, so the policy
// pass rewrites the Binding and bindingHandler queues the object's CombinedStatus from that entry change
// (after the cache holds the object's new content).
func (s *Sim) workloadHandler() handler {
	all := func(client.Object) { s.enqueueAllPolicies() }
	return handler{
		add:    all,
		update: func(_, _ client.Object) { s.enqueueAllPolicies() },
		del: func(o client.Object) {
			s.auto.forget(o.GetUID())
			s.enqueueAllPolicies()
		},
	}
}

func (s *Sim) enqueuePolicy(name string) {
	s.bindingQ.AddAfter(name, s.cfg.delay(s.cfg.BindingDelay))
}

func (s *Sim) enqueueStatus(k statusKey) {
	s.statusQ.AddAfter(k, s.cfg.delay(s.cfg.StatusDelay))
}

// isReady reports whether Start has set up the queues and caches.
func (s *Sim) isReady() bool {
	select {
	case <-s.ready:
		return true
	default:
		return false
	}
}

// enqueueAllPolicies queues every BindingPolicy. The list shares the cache's objects (read only).
func (s *Sim) enqueueAllPolicies() {
	var list controlv1alpha1.BindingPolicyList
	if err := s.client.List(context.Background(), &list, client.UnsafeDisableDeepCopy); err != nil {
		s.log.Error(err, "Listing BindingPolicies from the cache")
		return
	}
	for i := range list.Items {
		s.enqueuePolicy(list.Items[i].Name)
	}
}

// enqueueObjects queues the CombinedStatus work of the given objects in every Binding holding them.
func (s *Sim) enqueueObjects(refs map[ObjectRef]bool) {
	if len(refs) == 0 || !s.isReady() {
		return
	}
	s.forEachEntry(func(binding string, e *bindingEntry) {
		if refs[e.Ref] {
			s.enqueueStatus(statusKey{binding: binding, obj: e.Ref})
		}
	})
}

// enqueueObjectsUsing queues the CombinedStatus work of every Binding entry that names a collector.
func (s *Sim) enqueueObjectsUsing(collector string) {
	s.forEachEntry(func(binding string, e *bindingEntry) {
		if slices.Contains(e.Modulation.StatusCollectors, collector) {
			s.enqueueStatus(statusKey{binding: binding, obj: e.Ref})
		}
	})
}

// forEachEntry calls fn for every entry of every cached Binding; the Bindings are the cache's own (read only).
func (s *Sim) forEachEntry(fn func(binding string, e *bindingEntry)) {
	var list controlv1alpha1.BindingList
	if err := s.client.List(context.Background(), &list, client.UnsafeDisableDeepCopy); err != nil {
		s.log.Error(err, "Listing Bindings from the cache")
		return
	}
	for i := range list.Items {
		entries := bindingEntries(&list.Items[i].Spec)
		for j := range entries {
			fn(list.Items[i].Name, &entries[j])
		}
	}
}
