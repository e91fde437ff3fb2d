// Package ppsindex holds the cache indexes PersistentPodState is read through, in one place: the
// controller, the generator, the event handlers and both webhooks look PPS up by their target and pods by
// their controller, never by scanning a namespace. Tests build their fake clients with Indexes, so they read
// through exactly the production indexes.
package ppsindex

import (
	"context"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kruisev1beta1 "github.com/drover-dev/drover/api/kruise/apps/v1beta1"
	"github.com/drover-dev/drover/internal/index"
)

// Field index keys.
const (
	// FieldTarget indexes PersistentPodStates by TargetKey of spec.targetRef: "<group>/<Kind>/<name>", the
	// version left out (a target is matched by group, kind and name). A targetRef whose apiVersion does not
	// parse, or that lacks a kind or a name, gives no key. The cache keeps namespaced indexes, so a lookup
	// with client.InNamespace finds the PPS of one namespace only.
	FieldTarget = "drover.dev/pps-target"
	// FieldPodController indexes pods by the UID of their controller ownerReference (any kind: the custom
	// kinds a PPS may target change while the manager runs).
	FieldPodController = "drover.dev/controller-uid"
)

// Indexes returns the indexes of PersistentPodState. The manager registers them from the controller's
// description; tests pass them to the fake client.
func Indexes() []index.Index {
	return []index.Index{
		{Object: &kruisev1beta1.PersistentPodState{}, Field: FieldTarget, Extract: targetValues},
		{Object: &corev1.Pod{}, Field: FieldPodController, Extract: index.ControllerUIDValues},
	}
}

// TargetKey is the FieldTarget value of a workload of group gk named name.
func TargetKey(gk schema.GroupKind, name string) string {
	return gk.Group + "/" + gk.Kind + "/" + name
}

func targetValues(obj client.Object) []string {
	pps, ok := obj.(*kruisev1beta1.PersistentPodState)
	if !ok || pps.Spec.TargetRef.Kind == "" || pps.Spec.TargetRef.Name == "" {
		return nil
	}
	gk, err := kruisev1beta1.TargetGroupKind(pps.Spec.TargetRef)
	if err != nil {
		return nil
	}
	return []string{TargetKey(gk, pps.Spec.TargetRef.Name)}
}

// ForTarget lists the PersistentPodStates of namespace that target the workload gk/name, sorted oldest
// first (creation time, then name). It reads without a deep copy: the caller must not modify the results.
func ForTarget(ctx context.Context, r client.Reader, namespace string, gk schema.GroupKind, name string) (
	[]*kruisev1beta1.PersistentPodState, error) {
	var list kruisev1beta1.PersistentPodStateList
	if err := r.List(ctx, &list, client.InNamespace(namespace), client.MatchingFields{FieldTarget: TargetKey(gk, name)},
		client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("listing PersistentPodStates of %s %s/%s: %w", gk, namespace, name, err)
	}
	out := make([]*kruisev1beta1.PersistentPodState, len(list.Items))
	for i := range list.Items {
		out[i] = &list.Items[i]
	}
	slices.SortFunc(out, Older)
	return out, nil
}

// Older orders PersistentPodStates oldest first: by creation time, then by name.
func Older(a, b *kruisev1beta1.PersistentPodState) int {
	if c := a.CreationTimestamp.Compare(b.CreationTimestamp.Time); c != 0 {
		return c
	}
	return strings.Compare(a.Name, b.Name)
}

// Oldest returns the oldest PersistentPodState of list that is not being deleted, or nil: the one that
// steers pods when more than one targets a workload (admission refuses a second one, but it can be
// bypassed).
func Oldest(list []*kruisev1beta1.PersistentPodState) *kruisev1beta1.PersistentPodState {
	var best *kruisev1beta1.PersistentPodState
	for _, p := range list {
		if p.DeletionTimestamp == nil && (best == nil || Older(p, best) < 0) {
			best = p
		}
	}
	return best
}

// ControlledPods lists the pods of namespace whose controller ownerReference has uid. It reads without a
// deep copy: the caller must not modify the results.
func ControlledPods(ctx context.Context, r client.Reader, namespace string, uid types.UID) ([]*corev1.Pod, error) {
	var list corev1.PodList
	if err := r.List(ctx, &list, client.InNamespace(namespace), client.MatchingFields{FieldPodController: string(uid)},
		client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("listing the pods controlled by %s in %s: %w", uid, namespace, err)
	}
	out := make([]*corev1.Pod, len(list.Items))
	for i := range list.Items {
		out[i] = &list.Items[i]
	}
	return out, nil
}

// NodeMetadata returns an empty Node to read as metadata only, for the pod webhook's live read of a node
// missing from the cache (the cache itself holds typed Nodes, shared with the other controllers).
func NodeMetadata() *metav1.PartialObjectMetadata {
	n := &metav1.PartialObjectMetadata{}
	n.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Node"))
	return n
}
