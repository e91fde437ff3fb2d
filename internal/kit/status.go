package kit

import (
	"context"
	"fmt"
	"reflect"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// WriteStatus makes want the status of obj, which was read from the cache and is not modified. It writes
// nothing when equal(current, want) holds (equality.Semantic.DeepEqual when equal is nil), so a pass that
// changes nothing makes no API call. Otherwise it updates the status subresource with obj's
// resourceVersion, so a newer status is never overwritten: the write fails with a conflict instead.
//
// An update, not a merge patch: a patch costs the manager a diff of two documents and the API server a
// patch application on top of the decoding and validation an update needs anyway, and large statuses
// (one entry per pool or per instance) travel whole either way.
//
// An object deleted meanwhile (NotFound) is no error: its deletion ends the matter. It reports whether it
// wrote.
func WriteStatus[O client.Object, S any](ctx context.Context, c client.Client, obj O, status func(O) *S, want *S,
	equal func(a, b *S) bool) (bool, error) {
	return writeStatus(ctx, obj, status, want, equal, "writing", func(updated O) error {
		return c.Status().Update(ctx, updated)
	})
}

// writeStatus is the contract WriteStatus and PatchStatus share: no write when equal, the write of a copy
// of obj with want as its status, NotFound is no error.
func writeStatus[O client.Object, S any](_ context.Context, obj O, status func(O) *S, want *S, equal func(a, b *S) bool,
	verb string, write func(updated O) error) (bool, error) {
	if equal == nil {
		equal = func(a, b *S) bool { return equality.Semantic.DeepEqual(a, b) }
	}
	if equal(status(obj), want) {
		return false, nil
	}
	updated, ok := obj.DeepCopyObject().(O)
	if !ok {
		return false, fmt.Errorf("copying %s %s", kindOf(obj), client.ObjectKeyFromObject(obj))
	}
	*status(updated) = *want
	if err := write(updated); err != nil {
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return false, fmt.Errorf("%s status of %s %s: %w", verb, kindOf(obj), client.ObjectKeyFromObject(obj), err)
	}
	return true, nil
}

// kindOf names an object's Go type (typed objects read from the cache carry no kind).
func kindOf(obj client.Object) string {
	t := reflect.TypeOf(obj)
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t.Name()
}

// PatchStatus makes want the status of obj like WriteStatus, for a status that is a large map of which a
// pass changes a few entries (a PersistentPodState records every pod of its workload): instead of the whole
// status it sends a JSON merge patch of what differs (changed keys, removed keys as null), with obj's
// resourceVersion as a precondition, so a newer status is never overwritten (a conflict instead).
func PatchStatus[O client.Object, S any](ctx context.Context, c client.Client, obj O, status func(O) *S, want *S,
	equal func(a, b *S) bool) (bool, error) {
	return writeStatus(ctx, obj, status, want, equal, "patching", func(updated O) error {
		return c.Status().Patch(ctx, updated, client.MergeFromWithOptions(obj, client.MergeFromWithOptimisticLock{}))
	})
}
