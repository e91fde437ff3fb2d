package persistentpodstate

import (
	"context"
	"reflect"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	tkestackv1 "github.com/drover-dev/drover/api/tkestack/apps/v1"
	"github.com/drover-dev/drover/internal/persistentpodstate/core"
	"github.com/drover-dev/drover/internal/persistentpodstate/ppsindex"
	"github.com/drover-dev/drover/internal/persistentpodstate/whitelist"
)

type queue = workqueue.TypedRateLimitingInterface[reconcile.Request]

// mapper finds the PersistentPodStates of a workload through the target index; the event handlers share it.
type mapper struct {
	reader    client.Reader
	whitelist func() *whitelist.Snapshot
}

// PodEventBatch is how long pod events wait before the pass they ask for: a rollout or a scale-up turns
// hundreds of pods Ready within seconds, and each would otherwise ask for a pass over every pod of the
// workload. The queue keeps one pending request per PPS, so a burst costs one pass per batch.
const PodEventBatch = time.Second

// enqueue adds every PPS of namespace targeting gk/name (all of them: duplicates are reconciled too), after
// delay (0: at once).
func (m mapper) enqueue(ctx context.Context, q queue, namespace string, gk schema.GroupKind, name string, delay time.Duration) {
	list, err := ppsindex.ForTarget(ctx, m.reader, namespace, gk, name)
	if err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Mapping a workload event to its PersistentPodStates failed")
		return
	}
	for _, p := range list {
		req := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: p.Namespace, Name: p.Name}}
		if delay > 0 {
			q.AddAfter(req, delay)
		} else {
			q.Add(req)
		}
	}
}

// controllerGK returns the group-kind of obj's controller ownerReference and the reference, when it is a
// supported target kind.
func (m mapper) controllerGK(obj metav1.Object) (schema.GroupKind, *metav1.OwnerReference, bool) {
	ref := metav1.GetControllerOfNoCopy(obj)
	if ref == nil {
		return schema.GroupKind{}, nil, false
	}
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil {
		return schema.GroupKind{}, nil, false
	}
	gk := schema.GroupKind{Group: gv.Group, Kind: ref.Kind}
	return gk, ref, Supported(m.whitelist(), gk)
}

// podHandler maps pod events to the PPS of the pod's controller, on the changes that can change a record:
// Ready became true, the pod began terminating or finished, a persisted annotation changed; and every
// delete. It also asks the watcher for the pod controller's kind when that kind is whitelisted but not
// watched yet (its pods can appear before the whitelist's eager watch is up), and notes annotation changes
// of live pods for the annotation value rule.
type podHandler struct {
	mapper
	watcher *Watcher
	inLife  *inLife
}

var _ handler.EventHandler = podHandler{}

func (h podHandler) Create(_ context.Context, e event.CreateEvent, _ queue) { h.ensureWatch(e.Object) }

func (h podHandler) Update(ctx context.Context, e event.UpdateEvent, q queue) {
	oldPod, ok1 := e.ObjectOld.(*corev1.Pod)
	pod, ok2 := e.ObjectNew.(*corev1.Pod)
	if !ok1 || !ok2 || oldPod.ResourceVersion == pod.ResourceVersion {
		return
	}
	h.ensureWatch(pod)
	gk, ref, ok := h.controllerGK(pod)
	if !ok {
		return
	}
	trigger := !core.PodReady(oldPod) && core.PodReady(pod) ||
		oldPod.DeletionTimestamp == nil && pod.DeletionTimestamp != nil ||
		!core.PodFinished(oldPod) && core.PodFinished(pod)
	if h.annotationChanged(ctx, oldPod, pod, gk, ref.Name) {
		trigger = true
	}
	if trigger {
		h.enqueue(ctx, q, pod.Namespace, gk, ref.Name, PodEventBatch)
	}
}

func (h podHandler) Delete(ctx context.Context, e event.DeleteEvent, q queue) {
	if e.Object == nil {
		return
	}
	h.inLife.forgetPod(e.Object.GetUID())
	if gk, ref, ok := h.controllerGK(e.Object); ok {
		h.enqueue(ctx, q, e.Object.GetNamespace(), gk, ref.Name, PodEventBatch)
	}
}

func (podHandler) Generic(context.Context, event.GenericEvent, queue) {}

func (h podHandler) ensureWatch(obj client.Object) {
	gk, ref, ok := h.controllerGK(obj)
	if !ok || gk == statefulSetGK || gk == tappGK {
		return
	}
	if _, _, state := h.watcher.Informer(gk); state == kindWatched {
		return
	}
	version := ""
	if gv, err := schema.ParseGroupVersion(ref.APIVersion); err == nil {
		version = gv.Version
	}
	h.watcher.Request(gk, version)
}

// annotationChanged reports whether a persisted annotation of the pod's PPS changed value; a live pod that
// changes the recorded value of a key is noted, so the record follows it.
func (h podHandler) annotationChanged(ctx context.Context, oldPod, pod *corev1.Pod, gk schema.GroupKind, name string) bool {
	if reflect.DeepEqual(oldPod.Annotations, pod.Annotations) {
		return false
	}
	list, err := ppsindex.ForTarget(ctx, h.reader, pod.Namespace, gk, name)
	if err != nil {
		return false
	}
	changed := false
	for _, pps := range list {
		entry := pps.Status.PodStates[pod.Name]
		for _, a := range pps.Spec.PersistentPodAnnotations {
			was, now := oldPod.Annotations[a.Key], pod.Annotations[a.Key]
			if was == now {
				continue
			}
			changed = true
			if rec, ok := entry.Annotations[a.Key]; ok && was == rec && now != "" {
				h.inLife.observe(pod.UID, a.Key, now)
			}
		}
	}
	return changed
}

// workloadHandler maps events of a target kind to the PPS targeting the workload: create, delete, the
// start of deletion, and a change of what decides the valid ordinals (replicas, ordinals.start,
// reserveOrdinals). gk is the kind of a typed watch (a typed object carries no kind, and a native
// StatefulSet must map to the apps group); for an unstructured watch it is read from the object.
type workloadHandler struct {
	mapper
	gk schema.GroupKind
}

var _ handler.EventHandler = workloadHandler{}

func (h workloadHandler) kindOf(obj client.Object) (schema.GroupKind, bool) {
	gk := h.gk
	if gk.Empty() {
		gk = obj.GetObjectKind().GroupVersionKind().GroupKind()
	}
	return gk, Supported(h.whitelist(), gk)
}

func (h workloadHandler) Create(ctx context.Context, e event.CreateEvent, q queue) {
	if gk, ok := h.kindOf(e.Object); ok {
		h.enqueue(ctx, q, e.Object.GetNamespace(), gk, e.Object.GetName(), 0)
	}
}

func (h workloadHandler) Update(ctx context.Context, e event.UpdateEvent, q queue) {
	gk, ok := h.kindOf(e.ObjectNew)
	if !ok || e.ObjectOld.GetResourceVersion() == e.ObjectNew.GetResourceVersion() {
		return
	}
	entry, _ := h.whitelist().Lookup(gk)
	if e.ObjectOld.GetDeletionTimestamp() == nil && e.ObjectNew.GetDeletionTimestamp() != nil ||
		!reflect.DeepEqual(scaleFacts(e.ObjectOld, entry.Replicas()), scaleFacts(e.ObjectNew, entry.Replicas())) {
		h.enqueue(ctx, q, e.ObjectNew.GetNamespace(), gk, e.ObjectNew.GetName(), 0)
	}
}

func (h workloadHandler) Delete(ctx context.Context, e event.DeleteEvent, q queue) {
	if e.Object == nil {
		return
	}
	if gk, ok := h.kindOf(e.Object); ok {
		h.enqueue(ctx, q, e.Object.GetNamespace(), gk, e.Object.GetName(), 0)
	}
}

func (workloadHandler) Generic(context.Context, event.GenericEvent, queue) {}

// scaleFacts returns what decides a workload's valid ordinals: replicas, the first ordinal and the
// reserved ordinals.
func scaleFacts(obj client.Object, replicasPath string) [3]any {
	switch o := obj.(type) {
	case *appsv1.StatefulSet:
		return [3]any{o.Spec.Replicas, o.Spec.Ordinals, nil}
	case *tkestackv1.TApp:
		return [3]any{o.Spec.Replicas, nil, nil}
	case *unstructured.Unstructured:
		var facts [3]any
		facts[0], _, _ = unstructured.NestedFieldNoCopy(o.Object, strings.Split(replicasPath, ".")...)
		facts[1], _, _ = unstructured.NestedFieldNoCopy(o.Object, "spec", "ordinals")
		facts[2], _, _ = unstructured.NestedFieldNoCopy(o.Object, "spec", "reserveOrdinals")
		return facts
	}
	return [3]any{}
}
