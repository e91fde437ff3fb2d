package persistentpodstate

import (
	"context"
	"errors"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kruisev1beta1 "github.com/drover-dev/drover/api/kruise/apps/v1beta1"
	tkestackv1 "github.com/drover-dev/drover/api/tkestack/apps/v1"
	"github.com/drover-dev/drover/internal/persistentpodstate/core"
	"github.com/drover-dev/drover/internal/persistentpodstate/whitelist"
)

// The built-in target kinds.
var (
	statefulSetGK       = schema.GroupKind{Group: appsv1.GroupName, Kind: "StatefulSet"}
	kruiseStatefulSetGK = schema.GroupKind{Group: "apps.kruise.io", Kind: "StatefulSet"}
	tappGK              = schema.GroupKind{Group: tkestackv1.GroupVersion.Group, Kind: "TApp"}
)

// Reasons of the TargetUnavailable condition: why the controller cannot read a PPS's target, in which case
// it leaves the recorded placements as they are.
const (
	ReasonKindNotAllowed    = "KindNotAllowed"
	ReasonKindNotServed     = "KindNotServed"
	ReasonTargetNotReadable = "TargetNotReadable"
)

// UnavailableError says why a target cannot be read; Reason is one of the TargetUnavailable reasons.
type UnavailableError struct {
	Reason  string
	Message string
}

func (e *UnavailableError) Error() string { return e.Reason + ": " + e.Message }

// asUnavailable returns err as an *UnavailableError, or nil when it is not one.
func asUnavailable(err error) *UnavailableError {
	var u *UnavailableError
	if errors.As(err, &u) {
		return u
	}
	return nil
}

// Workload is what the finder learned of a target workload. Object is the cached object: never modify it.
type Workload struct {
	GK         schema.GroupKind
	APIVersion string
	Object     client.Object
	UID        types.UID
	Deleting   bool
	Replicas   int32
	// ReplicasMalformed: the replica count of a custom kind was missing or not a non-negative integer at
	// its path, and is taken as 0 (usually a wrong replicasPath in the whitelist).
	ReplicasMalformed bool
	Ordinals          core.Ordinals
	// ReserveError is why the reserved ordinals were ignored (an invalid item voids the whole list, as the
	// Advanced StatefulSet controller reads it); nil when they were read.
	ReserveError error
}

// Finder reads target workloads from the manager's cache: native StatefulSets and TApps typed, Kruise
// Advanced StatefulSets and whitelisted custom kinds as unstructured objects of a kind the watcher watches.
// It never starts an informer itself: a read of a kind that is not watched yet is an UnavailableError.
type Finder struct {
	Reader    client.Reader
	Whitelist func() *whitelist.Snapshot
	Watcher   *Watcher
	// SyncTimeout bounds the wait for a newly watched kind's informer to sync (without read permission it
	// never does).
	SyncTimeout time.Duration
}

// Supported reports whether gk is a target kind under the current whitelist.
func Supported(snap *whitelist.Snapshot, gk schema.GroupKind) bool {
	return gk == statefulSetGK || gk == kruiseStatefulSetGK || gk == tappGK || snap.Allowed(gk)
}

// Find returns the workload gk/name of namespace, nil when it does not exist (or when uid is set and the
// workload found has another UID), an *UnavailableError when its kind is not supported, served or readable,
// or another error to retry.
func (f *Finder) Find(ctx context.Context, namespace string, gk schema.GroupKind, name string, uid types.UID) (*Workload, error) {
	var w *Workload
	var err error
	switch gk {
	case statefulSetGK:
		w, err = f.findStatefulSet(ctx, namespace, name)
	case tappGK:
		w, err = f.findTApp(ctx, namespace, name)
	default:
		w, err = f.findUnstructured(ctx, namespace, gk, name)
	}
	if err != nil || w == nil {
		return nil, err
	}
	if uid != "" && w.UID != uid {
		return nil, nil
	}
	return w, nil
}

func (f *Finder) findStatefulSet(ctx context.Context, namespace, name string) (*Workload, error) {
	sts := &appsv1.StatefulSet{}
	if err := f.Reader.Get(ctx, types.NamespacedName{Namespace: namespace, Name: name}, sts); err != nil {
		return nil, readError(err, statefulSetGK)
	}
	replicas, start := int32(1), int32(0)
	if sts.Spec.Replicas != nil {
		replicas = *sts.Spec.Replicas
	}
	if sts.Spec.Ordinals != nil {
		start = sts.Spec.Ordinals.Start
	}
	return &Workload{GK: statefulSetGK, APIVersion: appsv1.SchemeGroupVersion.String(), Object: sts, UID: sts.UID,
		Deleting: sts.DeletionTimestamp != nil, Replicas: replicas, Ordinals: core.NewOrdinals(replicas, start, nil)}, nil
}

func (f *Finder) findTApp(ctx context.Context, namespace, name string) (*Workload, error) {
	app := &tkestackv1.TApp{}
	if err := f.Reader.Get(ctx, types.NamespacedName{Namespace: namespace, Name: name}, app); err != nil {
		return nil, readError(err, tappGK)
	}
	// Killed instances keep their ids below spec.replicas, so their entries stay with the valid ordinals.
	return &Workload{GK: tappGK, APIVersion: tkestackv1.GroupVersion.String(), Object: app, UID: app.UID,
		Deleting: app.DeletionTimestamp != nil, Replicas: app.Spec.Replicas,
		Ordinals: core.NewOrdinals(app.Spec.Replicas, 0, nil)}, nil
}

// findUnstructured reads a Kruise Advanced StatefulSet or a whitelisted kind from the informer the watcher
// started for it, after a bounded wait for that informer's first sync.
func (f *Finder) findUnstructured(ctx context.Context, namespace string, gk schema.GroupKind, name string) (*Workload, error) {
	var entry whitelist.Entry
	if gk != kruiseStatefulSetGK {
		var ok bool
		entry, ok = f.Whitelist().Lookup(gk)
		if !ok {
			return nil, &UnavailableError{Reason: ReasonKindNotAllowed,
				Message: fmt.Sprintf("%s is neither a built-in target kind nor in the custom-workload whitelist", gk)}
		}
	}
	gvk, synced, state := f.Watcher.Informer(gk)
	switch state {
	case kindWatched:
	case kindPending:
		return nil, &UnavailableError{Reason: ReasonKindNotServed,
			Message: fmt.Sprintf("the API server does not serve %s (is its CRD installed?); retried periodically", gk)}
	default:
		f.Watcher.Request(gk, entry.Version)
		return nil, &UnavailableError{Reason: ReasonKindNotServed, Message: fmt.Sprintf("%s is not watched yet", gk)}
	}
	if err := waitSynced(ctx, synced, f.SyncTimeout); err != nil {
		return nil, &UnavailableError{Reason: ReasonTargetNotReadable, Message: fmt.Sprintf(
			"the informer for %s has not synced within %s: the manager probably lacks get, list and watch on it "+
				"(grant them with a ClusterRole labelled %s=true)", gk, f.SyncTimeout, kruisev1beta1.LabelAggregateToManager)}
	}
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	if err := f.Reader.Get(ctx, types.NamespacedName{Namespace: namespace, Name: name}, u); err != nil {
		return nil, readError(err, gk)
	}
	return unstructuredWorkload(u, gk, entry.Replicas()), nil
}

// unstructuredWorkload reads replicas, the first ordinal and the reserved ordinals of an unstructured
// workload. Only a Kruise Advanced StatefulSet has a first ordinal (spec.ordinals.start) and reserved ordinals
// (spec.reserveOrdinals); a custom kind numbers its pods from 0.
// replicasPath is the whitelist entry's path of the replica count (whitelist.Entry.Replicas).
func unstructuredWorkload(u *unstructured.Unstructured, gk schema.GroupKind, replicasPath string) *Workload {
	w := &Workload{GK: gk, APIVersion: u.GetAPIVersion(), Object: u, UID: u.GetUID(), Deleting: u.GetDeletionTimestamp() != nil}
	if gk == kruiseStatefulSetGK {
		w.Replicas = 1 // an Advanced StatefulSet without spec.replicas runs one pod, like a native one
		if _, found, _ := unstructured.NestedFieldNoCopy(u.Object, "spec", "replicas"); found {
			w.Replicas, _ = core.ReplicasAt(u.Object, "spec.replicas")
		}
		start, _ := core.ReplicasAt(u.Object, "spec.ordinals.start")
		var reserved []int
		if items, found, _ := unstructured.NestedFieldNoCopy(u.Object, "spec", "reserveOrdinals"); found && items != nil {
			if list, isList := items.([]any); isList {
				reserved, w.ReserveError = core.ParseReserveOrdinals(list)
			} else {
				w.ReserveError = errors.New("spec.reserveOrdinals is not a list")
			}
		}
		w.Ordinals = core.NewOrdinals(w.Replicas, start, reserved)
		return w
	}
	var ok bool
	w.Replicas, ok = core.ReplicasAt(u.Object, replicasPath)
	w.ReplicasMalformed = !ok
	w.Ordinals = core.NewOrdinals(w.Replicas, 0, nil)
	return w
}

// readError turns a cache read error into the finder's answer: NotFound is "no workload" (nil), a kind the
// API server does not serve is an UnavailableError, anything else is returned to be retried.
func readError(err error, gk schema.GroupKind) error {
	switch {
	case apierrors.IsNotFound(err):
		return nil
	case meta.IsNoMatchError(err):
		return &UnavailableError{Reason: ReasonKindNotServed, Message: fmt.Sprintf("the API server does not serve %s", gk)}
	default:
		return fmt.Errorf("reading %s: %w", gk, err)
	}
}

// waitSynced waits until synced reports true, at most timeout.
func waitSynced(ctx context.Context, synced func() bool, timeout time.Duration) error {
	if synced() {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
			if synced() {
				return nil
			}
		}
	}
}
