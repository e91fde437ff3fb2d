package tapp

import (
	"context"
	"fmt"

	"github.com/drover-dev/drover/internal/tapp/core"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tkestackv1 "github.com/drover-dev/drover/api/tkestack/apps/v1"
	"github.com/drover-dev/drover/internal/kit"
)

// cachedClaim looks a desired PVC up by name in the cache; nil when absent.
func (r *Reconciler) cachedClaim(ctx context.Context, want *corev1.PersistentVolumeClaim) (*corev1.PersistentVolumeClaim, error) {
	pvc := &corev1.PersistentVolumeClaim{}
	err := r.cfg.Client.Get(ctx, client.ObjectKeyFromObject(want), pvc)
	switch {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("getting PVC %s: %w", want.Name, err)
	}
	return pvc, nil
}

// retainClaims is step 5 of the execution order, the PVC retention policy: the TApp ownerReference of in-range PVCs follows
// whenDeleted, and under whenScaled: Delete the PVCs of removed ids go once their pod is gone. Only TApps
// with claim templates list PVCs (from the cache, by the selector's labels, which every PVC drover creates
// carries).
func (r *Reconciler) retainClaims(ctx context.Context, rn *run) {
	s := &rn.pass.Settings
	if len(rn.app.Spec.VolumeClaimTemplates) == 0 || s.Blocked || s.Deleting || s.Selector == nil {
		return
	}
	list := &corev1.PersistentVolumeClaimList{}
	if err := r.cfg.Client.List(ctx, list, client.InNamespace(rn.app.Namespace), client.MatchingLabels(s.Selector.MatchLabels)); err != nil {
		rn.out.Error(fmt.Errorf("listing PVCs of TApp %s: %w", rn.key, err))
		return
	}
	pvcs := make([]*corev1.PersistentVolumeClaim, len(list.Items))
	for i := range list.Items {
		pvcs[i] = &list.Items[i]
	}
	r.fixClaimOwners(ctx, rn, pvcs)
	r.deleteScaledClaims(ctx, rn, pvcs)
}

// fixClaimOwners adds or removes the TApp ownerReference of in-range PVCs after a whenDeleted change.
func (r *Reconciler) fixClaimOwners(ctx context.Context, rn *run, pvcs []*corev1.PersistentVolumeClaim) {
	var base, fixed []*corev1.PersistentVolumeClaim
	for _, pvc := range pvcs {
		if out, ok := core.ClaimOwnerFix(rn.app, &rn.pass.Settings, pvc); ok {
			base, fixed = append(base, pvc), append(fixed, out)
		}
	}
	idx := make([]int, len(fixed))
	for i := range idx {
		idx[i] = i
	}
	results := kit.Run(ctx, r.writes(), idx, func(ctx context.Context, i int) (struct{}, error) {
		err := r.cfg.Client.Patch(ctx, fixed[i], client.MergeFromWithOptions(base[i], client.MergeFromWithOptimisticLock{}))
		if err != nil {
			return struct{}{}, fmt.Errorf("updating the ownerReferences of PVC %s: %w", base[i].Name, err)
		}
		return struct{}{}, nil
	})
	for i, res := range results {
		if res.Err != nil {
			rn.failClaim(tkestackv1.ReasonFailedUpdate, base[i], res.Err)
		}
	}
}

// deleteScaledClaims deletes the PVCs of removed ids under whenScaled: Delete (UID precondition).
func (r *Reconciler) deleteScaledClaims(ctx context.Context, rn *run, pvcs []*corev1.PersistentVolumeClaim) {
	expecting := map[int]bool{}
	for id := range rn.obs.Expecting {
		expecting[id] = true
	}
	for id := range rn.written {
		expecting[id] = true
	}
	doomed := r.withoutLivePods(ctx, rn, core.ScaledClaimsToDelete(rn.app, &rn.pass.Settings, pvcs, rn.view, expecting))
	results := kit.Run(ctx, r.writes(), doomed, func(ctx context.Context, pvc *corev1.PersistentVolumeClaim) (struct{}, error) {
		err := r.cfg.Client.Delete(ctx, pvc, client.Preconditions{UID: &pvc.UID})
		if err != nil && !apierrors.IsNotFound(err) {
			return struct{}{}, fmt.Errorf("deleting PVC %s: %w", pvc.Name, err)
		}
		return struct{}{}, err
	})
	for i, res := range results {
		switch {
		case res.Err == nil:
			rn.events.normal(tkestackv1.ReasonSuccessfulDelete, actionDelete, entry{obj: doomed[i],
				group: "Deleted %d PVCs of removed instances", note: "Deleted PVC " + doomed[i].Name + " of a removed instance"})
		case !apierrors.IsNotFound(res.Err):
			rn.failClaim(tkestackv1.ReasonFailedDelete, doomed[i], res.Err)
		}
	}
}

// withoutLivePods keeps the PVCs whose instance has no pod at all. The view holds only this TApp's
// well-formed pods: a pod just released, one whose release failed, or a malformed one still mounts the
// claim (a claim goes once the pod of its id is gone). A pod that cannot be read keeps its claims.
func (r *Reconciler) withoutLivePods(ctx context.Context, rn *run, claims []*corev1.PersistentVolumeClaim) []*corev1.PersistentVolumeClaim {
	out := claims[:0:0]
	for _, pvc := range claims {
		id, ok := core.ManagedClaim(rn.app, &rn.pass.Settings, pvc)
		if !ok {
			continue
		}
		pod := &corev1.Pod{}
		err := r.cfg.Client.Get(ctx, client.ObjectKey{Namespace: rn.app.Namespace, Name: core.PodName(rn.app.Name, id)}, pod)
		if apierrors.IsNotFound(err) {
			out = append(out, pvc)
		}
	}
	return out
}

// failClaim records a failed PVC write.
func (rn *run) failClaim(reason string, pvc *corev1.PersistentVolumeClaim, err error) {
	rn.fail(reason, pvc.Name, pvc, err)
}
