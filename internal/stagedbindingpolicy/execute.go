package stagedbindingpolicy

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	communityv1alpha1 "github.com/drover-dev/drover/api/kubestellar/community/v1alpha1"
	controlv1alpha1 "github.com/drover-dev/drover/api/kubestellar/control/v1alpha1"
	"github.com/drover-dev/drover/internal/kit"
	"github.com/drover-dev/drover/internal/stagedbindingpolicy/stager"
)

// Event action of BindingPolicy writes.
const actionBindingPolicy = "WriteBindingPolicy"

// bindingPolicyWrites bounds the BindingPolicy writes of one pass in flight: a pass writes one per stage at
// most (32), usually one or two.
const bindingPolicyWrites = 4

// execute applies the BindingPolicy writes, then the deletions, then the annotation removals of a decision,
// the writes and the deletions through the kit's bounded executor. Each that succeeds buffers its event; a
// failed one is recorded in o and the others still go; one the API server refused for its content (not
// retried, see kit.Outcome) buffers a BindingPolicyRefused warning. Deletions follow only when every write succeeded
// (they are planned only when every desired BindingPolicy is current, which needs no write anyway).
func (r *Reconciler) execute(ctx context.Context, sbp *communityv1alpha1.StagedBindingPolicy, d *stager.Decision,
	events *kit.Events, o *kit.Outcome) {
	exec := kit.Executor{Max: bindingPolicyWrites}
	for _, a := range kit.Run(ctx, exec, d.Writes, r.write) {
		o.Error(a.Err)
		a.Out.add(events)
		if kit.Refused(a.Err) {
			events.Warning(communityv1alpha1.ReasonBindingPolicyRefused, actionBindingPolicy, nil,
				"the API server refused a BindingPolicy write; drover tries again when the policy changes: %v", a.Err)
		}
	}
	if o.Failed() { // a refusal too: nothing is deleted while a desired BindingPolicy is not in place
		return
	}
	for _, a := range kit.Run(ctx, exec, d.Deletes, r.delete) {
		o.Error(a.Err)
		a.Out.add(events)
	}
	for _, rm := range d.AnnotationRemovals {
		o.Error(r.removeAnnotation(ctx, sbp, rm))
	}
}

// written is the event of one BindingPolicy write that happened ("" for none): the executor's calls run
// concurrently, so they return their events for the pass to buffer in order.
type written struct {
	reason, note string
}

func (w written) add(events *kit.Events) {
	if w.reason != "" {
		events.Normal(w.reason, actionBindingPolicy, nil, "%s", w.note)
	}
}

// write makes one BindingPolicy as desired. A create that finds the name taken (the cache had not seen it)
// reads the BindingPolicy from the API server and updates or adopts it in the same pass; one that belongs
// to someone else is left alone, and the next pass reports the conflict.
func (r *Reconciler) write(ctx context.Context, w stager.Write) (written, error) {
	switch w.Kind {
	case stager.WriteCreate:
		err := r.cfg.Client.Create(ctx, w.Desired.DeepCopy())
		if err == nil {
			return written{communityv1alpha1.ReasonBindingPolicyCreated, "Created BindingPolicy " + w.Desired.Name}, nil
		}
		if !apierrors.IsAlreadyExists(err) {
			return written{}, fmt.Errorf("creating BindingPolicy %s: %w", w.Desired.Name, err)
		}
		existing := &controlv1alpha1.BindingPolicy{}
		if err := r.cfg.APIReader.Get(ctx, client.ObjectKey{Name: w.Desired.Name}, existing); err != nil {
			return written{}, fmt.Errorf("reading BindingPolicy %s after its create found it: %w", w.Desired.Name, err)
		}
		kind, ok := stager.Reconcilable(existing, w.Desired)
		if !ok {
			return written{}, nil
		}
		w.Kind, w.Existing = kind, existing
	case stager.WriteUpdate, stager.WriteAdopt:
	default:
		return written{}, fmt.Errorf("unknown BindingPolicy write %q", w.Kind)
	}
	return r.patch(ctx, w)
}

// patch brings an existing BindingPolicy to the desired spec, labels and controller reference with a merge
// patch of what differs, under the resourceVersion it was read at: KubeStellar's finalizer and anything
// else of others is kept, and a concurrent change makes the patch fail with a conflict (retried).
func (r *Reconciler) patch(ctx context.Context, w stager.Write) (written, error) {
	merged := stager.MergeDesired(w.Existing, w.Desired)
	if err := r.cfg.Client.Patch(ctx, merged, client.MergeFromWithOptions(w.Existing, client.MergeFromWithOptimisticLock{})); err != nil {
		return written{}, fmt.Errorf("writing BindingPolicy %s: %w", w.Desired.Name, err)
	}
	if w.Kind == stager.WriteAdopt {
		return written{communityv1alpha1.ReasonBindingPolicyAdopted, "Adopted BindingPolicy " + w.Desired.Name}, nil
	}
	return written{communityv1alpha1.ReasonBindingPolicyUpdated, "Updated BindingPolicy " + w.Desired.Name + " to the stage's spec"}, nil
}

// delete deletes a BindingPolicy of the policy's, only the incarnation it decided on (UID precondition).
func (r *Reconciler) delete(ctx context.Context, del stager.Delete) (written, error) {
	bp := &controlv1alpha1.BindingPolicy{}
	bp.Name = del.Name
	uid := del.UID
	err := r.cfg.Client.Delete(ctx, bp, client.Preconditions{UID: &uid})
	switch {
	case err == nil:
		return written{communityv1alpha1.ReasonBindingPolicyDeleted, "Deleted BindingPolicy " + del.Name + ": its stage is no longer placed"}, nil
	case apierrors.IsNotFound(err):
		return written{}, nil
	}
	return written{}, fmt.Errorf("deleting BindingPolicy %s: %w", del.Name, err)
}

// removeAnnotation removes a consumed approve or retry annotation with a JSON patch that first tests its
// value, so a newer value someone set meanwhile is never clobbered (the test fails and nothing changes).
// sbp is the pass's own copy: the patch leaves it as the API server returned it, with the resourceVersion
// the pass's status write then needs.
func (r *Reconciler) removeAnnotation(ctx context.Context, sbp *communityv1alpha1.StagedBindingPolicy, rm stager.AnnotationRemoval) error {
	path := "/metadata/annotations/" + strings.NewReplacer("~", "~0", "/", "~1").Replace(rm.Key)
	ops := []map[string]any{
		{"op": "test", "path": path, "value": rm.Value},
		{"op": "remove", "path": path},
	}
	body, err := json.Marshal(ops)
	if err != nil {
		return fmt.Errorf("encoding the removal of annotation %s: %w", rm.Key, err)
	}
	err = r.cfg.Client.Patch(ctx, sbp, client.RawPatch(types.JSONPatchType, body))
	if err == nil || apierrors.IsNotFound(err) || apierrors.IsInvalid(err) {
		return nil // removed, or changed meanwhile (the test failed): the newer value stands
	}
	return fmt.Errorf("removing annotation %s: %w", rm.Key, err)
}
