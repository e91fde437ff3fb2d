package persistentpodstate

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"

	kruisev1beta1 "github.com/drover-dev/drover/api/kruise/apps/v1beta1"
	"github.com/drover-dev/drover/internal/persistentpodstate/whitelist"
)

type workloadQueue = workqueue.TypedRateLimitingInterface[WorkloadKey]

// generatorAnnotations are the workload annotations the generator reads.
var generatorAnnotations = []string{
	kruisev1beta1.AnnotationAutoGeneratePersistentPodState,
	kruisev1beta1.AnnotationRequiredPersistentTopology,
	kruisev1beta1.AnnotationPreferredPersistentTopology,
	kruisev1beta1.AnnotationPersistentPodAnnotations,
	kruisev1beta1.AnnotationRestorePersistentPodAnnotations,
}

// generatorWorkloadHandler asks the generator about a workload when it appears (a new workload, or every
// workload of a kind when its watch starts) and when one of its generator annotations changes.
type generatorWorkloadHandler struct {
	gk        schema.GroupKind // empty for an unstructured watch: read from the object
	whitelist func() *whitelist.Snapshot
}

var _ handler.TypedEventHandler[client.Object, WorkloadKey] = generatorWorkloadHandler{}

func (h generatorWorkloadHandler) key(obj client.Object) (WorkloadKey, bool) {
	gk := h.gk
	if gk.Empty() {
		gk = obj.GetObjectKind().GroupVersionKind().GroupKind()
	}
	return WorkloadKey{Group: gk.Group, Kind: gk.Kind, Namespace: obj.GetNamespace(), Name: obj.GetName()},
		Supported(h.whitelist(), gk)
}

func (h generatorWorkloadHandler) Create(_ context.Context, e event.TypedCreateEvent[client.Object], q workloadQueue) {
	if k, ok := h.key(e.Object); ok {
		q.Add(k)
	}
}

func (h generatorWorkloadHandler) Update(_ context.Context, e event.TypedUpdateEvent[client.Object], q workloadQueue) {
	k, ok := h.key(e.ObjectNew)
	if !ok {
		return
	}
	oldAnn, newAnn := e.ObjectOld.GetAnnotations(), e.ObjectNew.GetAnnotations()
	for _, a := range generatorAnnotations {
		ov, ook := oldAnn[a]
		nv, nok := newAnn[a]
		if ov != nv || ook != nok {
			q.Add(k)
			return
		}
	}
}

func (generatorWorkloadHandler) Delete(context.Context, event.TypedDeleteEvent[client.Object], workloadQueue) {
}

func (generatorWorkloadHandler) Generic(context.Context, event.TypedGenericEvent[client.Object], workloadQueue) {
}

// generatorPPSHandler asks the generator about the owner of a generated PPS that was deleted or whose
// managed fields were changed by hand: while the annotations ask for it, the generator restores it.
type generatorPPSHandler struct{}

var _ handler.TypedEventHandler[client.Object, WorkloadKey] = generatorPPSHandler{}

func ownerKeyOf(obj client.Object) (WorkloadKey, bool) {
	ref := metav1.GetControllerOfNoCopy(obj)
	if ref == nil {
		return WorkloadKey{}, false
	}
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil {
		return WorkloadKey{}, false
	}
	return WorkloadKey{Group: gv.Group, Kind: ref.Kind, Namespace: obj.GetNamespace(), Name: ref.Name}, true
}

func (generatorPPSHandler) Create(context.Context, event.TypedCreateEvent[client.Object], workloadQueue) {
}

func (generatorPPSHandler) Update(_ context.Context, e event.TypedUpdateEvent[client.Object], q workloadQueue) {
	oldPPS, ok1 := e.ObjectOld.(*kruisev1beta1.PersistentPodState)
	newPPS, ok2 := e.ObjectNew.(*kruisev1beta1.PersistentPodState)
	if !ok1 || !ok2 || managedEqual(oldPPS, newPPS) {
		return
	}
	if k, ok := ownerKeyOf(newPPS); ok {
		q.Add(k)
	}
}

// Delete asks about the owner of a deleted PPS, and about its target: a workload whose generated PPS was
// refused because this one tracked it gets its PPS now.
func (generatorPPSHandler) Delete(_ context.Context, e event.TypedDeleteEvent[client.Object], q workloadQueue) {
	if e.Object == nil {
		return
	}
	owner, owned := ownerKeyOf(e.Object)
	if owned {
		q.Add(owner)
	}
	if pps, ok := e.Object.(*kruisev1beta1.PersistentPodState); ok {
		if gk, err := kruisev1beta1.TargetGroupKind(pps.Spec.TargetRef); err == nil && pps.Spec.TargetRef.Name != "" {
			if target := (WorkloadKey{Group: gk.Group, Kind: gk.Kind, Namespace: pps.Namespace, Name: pps.Spec.TargetRef.Name}); !owned || target != owner {
				q.Add(target)
			}
		}
	}
}

func (generatorPPSHandler) Generic(context.Context, event.TypedGenericEvent[client.Object], workloadQueue) {
}
