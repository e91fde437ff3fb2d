package tapp

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/drover-dev/drover/internal/tapp/core"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tkestackv1 "github.com/drover-dev/drover/api/tkestack/apps/v1"
	"github.com/drover-dev/drover/internal/kit"
)

// writeGates is step 1 of the execution order (execute): the gate condition of current pods, where it differs from the desired one
// . A write that turns the gate True after an in-place update completes it.
func (r *Reconciler) writeGates(ctx context.Context, rn *run) {
	gates := rn.plan.GateWrites()
	results := kit.Run(ctx, r.writes(), gates, func(ctx context.Context, a core.InstanceAction) (*corev1.Pod, error) {
		return r.writeGate(ctx, a.Pod, a.Gate.Status, rn.now)
	})
	for i, a := range gates {
		res := results[i]
		if res.Err != nil {
			rn.fail(tkestackv1.ReasonFailedUpdate, tkestackv1.FormatInstanceID(a.ID), a.Pod, res.Err)
			continue
		}
		rn.view[a.ID] = res.Out
		r.expect(rn, a.ID, &expectation{kind: expectWrite, uid: res.Out.UID, rv: res.Out.ResourceVersion, pod: res.Out})
		if a.Gate.Completed {
			r.completeInPlaceUpdate(rn, a.Pod)
		}
	}
}

// completeInPlaceUpdate reports the end of an in-place update: event and duration metric.
func (r *Reconciler) completeInPlaceUpdate(rn *run, pod *corev1.Pod) {
	msg, name := "In-place update of pod "+pod.Name+" completed", pod.Name
	if rec, ok := core.RecordOf(pod); ok && !rec.StartTime.IsZero() {
		d := rn.now.Sub(rec.StartTime.Time)
		inPlaceUpdateDuration.Observe(max(d, 0).Seconds())
		msg += " after " + d.Round(time.Second).String()
		name += " (" + d.Round(time.Second).String() + ")"
	}
	rn.events.normal(tkestackv1.ReasonInPlaceUpdateCompleted, actionUpdate, entry{obj: pod,
		group: "In-place update of %d pods completed", note: msg, name: name})
}

// deletePods is step 2 of the execution order: graceful deletes (completed, out-of-range, migrating and recreated pods)
// and force deletes, all with a UID precondition.
func (r *Reconciler) deletePods(ctx context.Context, rn *run) {
	dels := rn.plan.Deletes()
	results := kit.Run(ctx, r.writes(), dels, func(ctx context.Context, a core.InstanceAction) (struct{}, error) {
		return struct{}{}, r.deletePod(ctx, a.Pod, a.Action == core.ActionForceDelete)
	})
	for i, a := range dels {
		force := a.Action == core.ActionForceDelete
		if err := results[i].Err; err != nil && !apierrors.IsNotFound(err) {
			rn.fail(tkestackv1.ReasonFailedDelete, tkestackv1.FormatInstanceID(a.ID), a.Pod, err)
			continue
		}
		x := &expectation{kind: expectDelete, uid: a.Pod.UID, graceful: !force}
		if force || results[i].Err != nil {
			delete(rn.view, a.ID)
		} else {
			x.pod = core.AfterGracefulDelete(rn.view[a.ID], rn.now)
			rn.view[a.ID] = x.pod
		}
		r.expect(rn, a.ID, x)
		if results[i].Err == nil { // else already gone
			rn.events.normal(tkestackv1.ReasonSuccessfulDelete, actionDelete, deleteEntry(rn, a, force))
		}
	}
}

// deleteEntry is the event entry of a deleted pod.
func deleteEntry(rn *run, a core.InstanceAction, force bool) entry {
	if force {
		return entry{obj: a.Pod, group: "Deleted %d pods with grace period 0: their nodes are lost",
			note: fmt.Sprintf("Deleted pod %s with grace period 0: its node %s is lost", a.Pod.Name, a.Pod.Spec.NodeName),
			name: a.Pod.Name + " (node " + a.Pod.Spec.NodeName + ")"}
	}
	why := deleteWhy(rn, a)
	return entry{obj: a.Pod, group: "Deleted %d pods (" + why + ")", note: "Deleted pod " + a.Pod.Name + " (" + why + ")"}
}

// deleteWhy says why a pod was deleted, for the event.
func deleteWhy(rn *run, a core.InstanceAction) string {
	switch {
	case a.Action == core.ActionRecreate:
		return "recreated with the new template"
	case a.Class == core.ClassOutOfRange:
		return "scaled down"
	case a.Class == core.ClassCompleted && rn.pass.Settings.Killed[a.ID]:
		return "killed"
	case a.Class == core.ClassCompleted:
		return "instance finished"
	default:
		return "pod finished and migrates"
	}
}

// createOutcome is what creating one instance did.
type createOutcome struct {
	// claims are the PVCs created for it.
	claims []*corev1.PersistentVolumeClaim
	// claimWait names a PVC being deleted that the create waits for; claimConflict one of another owner.
	claimWait, claimConflict string
	// exists is true when the pod create returned AlreadyExists.
	exists bool
	// created is the created pod; gated the pod after the gate write (nil when that failed, gateErr).
	created, gated *corev1.Pod
	gateErr        error
}

// createPods is step 3 of the execution order: creates in ascending id, in slow-start batches; PVCs first,
// then the pod, then its gate True. A create that finds its name taken (AlreadyExists) does not stop them.
func (r *Reconciler) createPods(ctx context.Context, rn *run) {
	creates := rn.plan.Creates()
	exec := kit.Executor{Max: r.cfg.PodWriteConcurrency, SlowStart: true, Tolerate: kit.TolerateAlreadyExists}
	results := kit.Run(ctx, exec, creates, func(ctx context.Context, a core.InstanceAction) (createOutcome, error) {
		return r.createInstance(ctx, rn, a)
	})
	terminating := 0
	for i, a := range creates {
		res := results[i]
		if !res.Done {
			continue
		}
		out := res.Out
		for _, pvc := range out.claims {
			rn.events.normal(tkestackv1.ReasonSuccessfulCreate, actionCreate, entry{obj: pvc, group: "Created %d PVCs",
				note: fmt.Sprintf("Created PVC %s for instance %d", pvc.Name, a.ID)})
		}
		switch {
		case kit.Harmless(res.Err):
			// The namespace is being deleted: its content goes in no particular order, the pods often before
			// the TApp, whose deletion follows; nothing can be created there any more, which is no failure
			// (no issue, Warning, error or retry with backoff).
			terminating++
		case res.Err != nil:
			rn.fail(tkestackv1.ReasonFailedCreate, tkestackv1.FormatInstanceID(a.ID), a.Desired, res.Err)
		case out.claimWait != "":
			rn.out.RequeueAfter(claimWaitRequeueDelay)
		case out.claimConflict != "":
			// PVCs are not watched: the conflict ends without an event when the other owner's PVC goes.
			rn.out.RequeueAfter(claimWaitRequeueDelay)
			rn.planIssues = append(rn.planIssues, core.IDIssue(tkestackv1.ReasonFailedCreate, a.ID,
				"instance %d: PVC %s is controlled by another owner", a.ID, out.claimConflict))
		case out.exists:
			// The cache has not shown the pod of that name yet; when it is foreign, its events may not map to
			// this TApp, so look again once the cache caught up (PodNameConflict or adoption).
			rn.lostRace()
		default:
			r.recordCreate(rn, a, out)
		}
	}
	if terminating > 0 {
		ctrl.LoggerFrom(ctx).V(1).Info("Skipped creating pods: the namespace is being deleted", "instances", terminating)
	}
}

// recordCreate puts a created pod into the view, records its expectation and event, and reports a failed
// gate write.
func (r *Reconciler) recordCreate(rn *run, a core.InstanceAction, out createOutcome) {
	latest := out.created
	view := core.AfterCreate(latest)
	if out.gated != nil {
		latest = out.gated
		view = core.WithGate(core.AfterCreate(latest), corev1.ConditionTrue, rn.now)
	}
	rn.view[a.ID] = view
	r.expect(rn, a.ID, &expectation{kind: expectCreate, uid: latest.UID, rv: latest.ResourceVersion, pod: view})
	rn.events.normal(tkestackv1.ReasonSuccessfulCreate, actionCreate, entry{obj: out.created, group: "Created %d pods",
		note: "Created pod " + out.created.Name})
	if out.gateErr != nil {
		rn.fail(tkestackv1.ReasonFailedUpdate, tkestackv1.FormatInstanceID(a.ID), out.created, out.gateErr)
	}
}

// createInstance creates the PVCs and the pod of one instance and writes its gate True. The error is a
// failed create (PVC or pod); a failed gate write is in the outcome.
func (r *Reconciler) createInstance(ctx context.Context, rn *run, a core.InstanceAction) (createOutcome, error) {
	var out createOutcome
	for _, claim := range core.DesiredClaims(rn.app, a.ID, &rn.pass.Settings) {
		existing, err := r.cachedClaim(ctx, claim)
		if err != nil {
			return out, err
		}
		switch core.CheckClaim(rn.app, existing) {
		case core.ClaimTerminating:
			out.claimWait = claim.Name
			return out, nil
		case core.ClaimConflict:
			out.claimConflict = claim.Name
			return out, nil
		case core.ClaimMissing:
			err := r.cfg.Client.Create(ctx, claim)
			switch {
			case apierrors.IsAlreadyExists(err):
			case err != nil:
				return out, fmt.Errorf("creating PVC %s: %w", claim.Name, err)
			default:
				out.claims = append(out.claims, claim)
			}
		}
	}
	pod := a.Desired.DeepCopy()
	err := r.cfg.Client.Create(ctx, pod)
	countWrite(opCreate, err)
	switch {
	case apierrors.IsAlreadyExists(err):
		out.exists = true
		return out, nil
	case err != nil:
		return out, fmt.Errorf("creating pod %s: %w", pod.Name, err)
	}
	out.created = pod
	out.gated, out.gateErr = r.writeGate(ctx, pod, corev1.ConditionTrue, rn.now)
	return out, nil
}

// updateOutcome is what updating one pod did: the final pod, or, when an in-place patch failed after the
// gate went False, the gated pod.
type updateOutcome struct {
	pod, gated *corev1.Pod
	changes    []core.ContainerChange
}

// updatePods is step 4 of the execution order: the scheduled updates in ascending id: re-stamps and metadata-only patches
// (on top of a gate write of step 1), and in-place updates with the gate protocol (gate False, then the
// pod patch, then gate True once the containers run the new images).
func (r *Reconciler) updatePods(ctx context.Context, rn *run) {
	ups := rn.plan.Updates()
	bases := make([]*corev1.Pod, len(ups))
	idx := make([]int, len(ups))
	for i, a := range ups {
		bases[i], idx[i] = rn.view[a.ID], i
	}
	results := kit.Run(ctx, r.writes(), idx, func(ctx context.Context, i int) (updateOutcome, error) {
		return r.updateInstance(ctx, rn, ups[i], bases[i])
	})
	for i, a := range ups {
		res := results[i]
		if res.Err != nil {
			if g := res.Out.gated; g != nil {
				rn.view[a.ID] = g
				r.expect(rn, a.ID, &expectation{kind: expectWrite, uid: g.UID, rv: g.ResourceVersion, pod: g})
			}
			rn.fail(tkestackv1.ReasonFailedUpdate, tkestackv1.FormatInstanceID(a.ID), bases[i], res.Err)
			continue
		}
		pod := res.Out.pod
		rn.view[a.ID] = pod
		r.expect(rn, a.ID, &expectation{kind: expectWrite, uid: pod.UID, rv: pod.ResourceVersion, pod: pod})
		rn.events.normal(tkestackv1.ReasonSuccessfulUpdate, actionUpdate, updateEntry(pod, res.Out.changes))
	}
}

// updateEntry is the event entry of an updated pod: in place (with its new images) or of its metadata.
func updateEntry(pod *corev1.Pod, changes []core.ContainerChange) entry {
	if len(changes) == 0 {
		return entry{obj: pod, group: "Updated the labels and annotations of %d pods",
			note: "Updated the labels and annotations of pod " + pod.Name}
	}
	list := changeList(changes)
	return entry{obj: pod, group: "Updating %d pods in place", note: "Updating pod " + pod.Name + " in place: " + list,
		name: pod.Name + " (" + list + ")"}
}

// updateInstance patches one pod. An in-place image update first writes the gate False, then patches the
// pod computed from the object that write returned, guarded by its resourceVersion.
func (r *Reconciler) updateInstance(ctx context.Context, rn *run, a core.InstanceAction, base *corev1.Pod) (updateOutcome, error) {
	switch {
	case a.Action == core.ActionRestamp:
		pod, err := r.patchPod(ctx, base, core.Restamp(base, a.Template))
		return updateOutcome{pod: pod}, err
	case !a.InPlace:
		merged, _ := core.MergePod(base, a.Desired)
		pod, err := r.patchPod(ctx, base, merged)
		return updateOutcome{pod: pod}, err
	}
	gated, err := r.writeGate(ctx, base, corev1.ConditionFalse, rn.now)
	if err != nil {
		return updateOutcome{}, err
	}
	for attempt := 1; ; attempt++ {
		patched, changes, err := core.StartInPlaceUpdate(gated, a.Desired, rn.now)
		if err != nil {
			return updateOutcome{gated: gated}, fmt.Errorf("computing the in-place update of pod %s: %w", base.Name, err)
		}
		pod, err := r.patchPod(ctx, gated, patched)
		if err == nil {
			return updateOutcome{pod: pod, changes: changes}, nil
		}
		if !apierrors.IsConflict(err) || attempt == inPlaceAttempts {
			return updateOutcome{gated: gated}, err
		}
		// The kubelet (kwok here) reacts to the gate write by recomputing Ready, which usually lands between
		// (a) and (b). Rather than leaving the update to the next pass (gate True again, then False again),
		// retry (b) from a fresh read while the gate is still False on the same pod: the record then takes
		// the old container state from that object, as it must. Deliberate uncached read: the cache is
		// behind the write that caused the conflict.
		fresh := &corev1.Pod{}
		if rerr := r.cfg.APIReader.Get(ctx, client.ObjectKeyFromObject(gated), fresh); rerr != nil ||
			fresh.UID != gated.UID || !fresh.DeletionTimestamp.IsZero() || gateStatus(fresh) != corev1.ConditionFalse {
			return updateOutcome{gated: gated}, err
		}
		gated = fresh
	}
}

// inPlaceAttempts bounds the tries of the in-place patch of one pod in one pass.
const inPlaceAttempts = 3

// gateStatus returns the status of the pod's gate condition, or "" when it has none.
func gateStatus(pod *corev1.Pod) corev1.ConditionStatus {
	if c := core.GateCondition(pod); c != nil {
		return c.Status
	}
	return ""
}

func changeList(changes []core.ContainerChange) string {
	parts := make([]string, len(changes))
	for i, c := range changes {
		parts[i] = c.Name + "=" + c.Image
	}
	return strings.Join(parts, ", ")
}

// writeGate sets the pod's gate condition through the status subresource: a strategic merge on
// status.conditions by type that touches only this condition, guarded by the pod's UID. It returns
// the pod the API server returned.
func (r *Reconciler) writeGate(ctx context.Context, pod *corev1.Pod, status corev1.ConditionStatus, now time.Time) (*corev1.Pod, error) {
	body, err := json.Marshal(map[string]any{
		"metadata": map[string]any{"uid": pod.UID},
		"status":   map[string]any{"conditions": []corev1.PodCondition{core.NewGateCondition(status, now)}},
	})
	if err != nil {
		return nil, fmt.Errorf("encoding the gate of pod %s: %w", pod.Name, err)
	}
	out := pod.DeepCopy()
	err = r.cfg.Client.Status().Patch(ctx, out, client.RawPatch(types.StrategicMergePatchType, body))
	countWrite(opGate, err)
	if err != nil {
		return nil, fmt.Errorf("setting the %s condition of pod %s to %s: %w", tkestackv1.InPlaceUpdateReady, pod.Name, status, err)
	}
	return out, nil
}

// patchPod patches a pod from base to patched (strategic merge: containers by name), guarded by base's
// resourceVersion.
func (r *Reconciler) patchPod(ctx context.Context, base, patched *corev1.Pod) (*corev1.Pod, error) {
	out := patched.DeepCopy()
	err := r.cfg.Client.Patch(ctx, out, client.StrategicMergeFrom(base, client.MergeFromWithOptimisticLock{}))
	countWrite(opInPlaceUpdate, err)
	if err != nil {
		return nil, fmt.Errorf("patching pod %s: %w", base.Name, err)
	}
	return out, nil
}

// writes is the executor of pod and PVC writes other than creates: bounded, without slow start.
func (r *Reconciler) writes() kit.Executor { return kit.Executor{Max: r.cfg.PodWriteConcurrency} }

// deletePod deletes a pod, gracefully or with grace period 0, with a UID precondition.
func (r *Reconciler) deletePod(ctx context.Context, pod *corev1.Pod, force bool) error {
	opts := []client.DeleteOption{client.Preconditions{UID: &pod.UID}}
	op := opDelete
	if force {
		opts = append(opts, client.GracePeriodSeconds(0))
		op = opForceDelete
	}
	err := r.cfg.Client.Delete(ctx, pod, opts...)
	countWrite(op, err)
	if err != nil {
		return fmt.Errorf("deleting pod %s: %w", pod.Name, err)
	}
	return nil
}
