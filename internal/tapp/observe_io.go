package tapp

import (
	"context"
	"fmt"
	"slices"

	"github.com/drover-dev/drover/internal/tapp/core"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tkestackv1 "github.com/drover-dev/drover/api/tkestack/apps/v1"
	"github.com/drover-dev/drover/internal/kit"
)

// observe fills rn.obs and starts the post-action view (step 2 of the data flow, doc.go); it only reads. From
// the pods the TApp controls after claimPods: classification, pending expectations, names taken by pods of
// other owners and the nodes of terminating pods. An error means the pass cannot know what exists: it
// stops before any pod write and before the status.
func (r *Reconciler) observe(ctx context.Context, rn *run, controlled []*corev1.Pod) error {
	cls := core.ClassifyPods(rn.app, controlled)

	pods := cls.Pods
	expecting := map[int]bool{}
	for id, x := range r.exp.pending(rn.key, rn.app.UID, cls.Pods, rn.now) {
		// The cache does not show this pass's predecessor's write yet: take the pod as that write left it.
		expecting[id] = true
		if x.pod != nil {
			pods[id] = x.pod
		} else {
			delete(pods, id)
		}
	}
	taken, err := r.namesTaken(ctx, rn, pods, cls.NameTaken, expecting)
	if err != nil {
		return err
	}
	nodes, err := r.nodesOf(ctx, rn.app, pods)
	if err != nil {
		return err
	}
	rn.obs = core.Observation{Pods: pods, Malformed: cls.Malformed, NameTaken: taken, Expecting: expecting, Nodes: nodes, Now: rn.now}
	rn.view = pods.Clone()
	return nil
}

// listOwnedPods lists the pods the TApp controls from the cache, through the owner-UID index. The
// pods are the cache's own objects (no deep copy): a pass never modifies a pod it observed, every write
// works on a copy.
func (r *Reconciler) listOwnedPods(ctx context.Context, app *tkestackv1.TApp) ([]*corev1.Pod, error) {
	list := &corev1.PodList{}
	if err := r.cfg.Client.List(ctx, list, client.InNamespace(app.Namespace),
		client.MatchingFields{IndexPodController: string(app.UID)}, client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("listing pods of TApp %s: %w", client.ObjectKeyFromObject(app), err)
	}
	out := make([]*corev1.Pod, len(list.Items))
	for i := range list.Items {
		out[i] = &list.Items[i]
	}
	return out, nil
}

// claimPods writes the controller references of the pass: it releases the owned pods that no longer
// match the selector, then adopts the orphans the TApp may adopt. It returns the pods the TApp controls
// after these writes; their failures are issues and errors of the run. An error (listing the orphans)
// stops the pass.
func (r *Reconciler) claimPods(ctx context.Context, rn *run, owned []*corev1.Pod) ([]*corev1.Pod, error) {
	owned = r.releasePods(ctx, rn, owned)
	adopted, err := r.adoptOrphans(ctx, rn)
	if err != nil {
		return nil, err
	}
	return append(owned, adopted...), nil
}

// releasePods removes the TApp's controller reference from owned pods that no longer match the selector
// and returns the pods that stay owned. A pod whose release failed stays out of this pass too: it
// does not belong to the TApp any more.
func (r *Reconciler) releasePods(ctx context.Context, rn *run, owned []*corev1.Pod) []*corev1.Pod {
	sel := rn.pass.Selector()
	if rn.pass.Settings.Deleting || sel == nil {
		return owned
	}
	var keep, release []*corev1.Pod
	for _, pod := range owned {
		if core.ShouldRelease(rn.app, sel, pod) {
			release = append(release, pod)
		} else {
			keep = append(keep, pod)
		}
	}
	results := kit.Run(ctx, r.writes(), release, func(ctx context.Context, pod *corev1.Pod) (*corev1.Pod, error) {
		refs := slices.DeleteFunc(slices.Clone(pod.OwnerReferences), func(ref metav1.OwnerReference) bool {
			return ref.UID == rn.app.UID
		})
		return r.patchOwnerRefs(ctx, pod, refs)
	})
	for i, res := range results {
		if res.Err != nil {
			rn.fail(tkestackv1.ReasonFailedUpdate, release[i].Name, release[i], fmt.Errorf("releasing pod %s: %w", release[i].Name, res.Err))
			continue
		}
		rn.events.normal(tkestackv1.ReasonReleased, actionRelease, entry{obj: release[i],
			group: "Released %d pods: they no longer match the selector", note: "Released pod " + release[i].Name + ": it no longer matches the selector"})
	}
	return keep
}

// adoptOrphans gives the TApp's controller reference to the orphans it may adopt, after one uncached
// read confirming the TApp's UID and that it is not being deleted. It returns the adopted pods.
func (r *Reconciler) adoptOrphans(ctx context.Context, rn *run) ([]*corev1.Pod, error) {
	sel := rn.pass.Selector()
	if rn.pass.Settings.Deleting || sel == nil {
		return nil, nil
	}
	list := &corev1.PodList{}
	if err := r.cfg.Client.List(ctx, list, client.InNamespace(rn.app.Namespace),
		client.MatchingFields{IndexOrphanPod: rn.app.Name}, client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("listing orphan pods of TApp %s: %w", rn.key, err)
	}
	var orphans []*corev1.Pod
	for i := range list.Items {
		if core.CanAdopt(rn.app, sel, &list.Items[i]) {
			orphans = append(orphans, &list.Items[i])
		}
	}
	if len(orphans) == 0 {
		return nil, nil
	}
	// Deliberately uncached: adopting for a TApp that was deleted and recreated under the same name would
	// hand the pods to the wrong owner.
	fresh := &tkestackv1.TApp{}
	if err := r.cfg.APIReader.Get(ctx, rn.key, fresh); err != nil {
		return nil, client.IgnoreNotFound(fmt.Errorf("re-reading TApp %s before adoption: %w", rn.key, err))
	}
	if fresh.UID != rn.app.UID || fresh.DeletionTimestamp != nil {
		return nil, nil
	}
	results := kit.Run(ctx, r.writes(), orphans, func(ctx context.Context, pod *corev1.Pod) (*corev1.Pod, error) {
		refs := append(slices.Clone(pod.OwnerReferences), core.OwnerReference(rn.app))
		return r.patchOwnerRefs(ctx, pod, refs)
	})
	var adopted []*corev1.Pod
	for i, res := range results {
		if res.Err != nil {
			rn.fail(tkestackv1.ReasonFailedUpdate, orphans[i].Name, orphans[i], fmt.Errorf("adopting pod %s: %w", orphans[i].Name, res.Err))
			continue
		}
		adopted = append(adopted, res.Out)
		rn.events.normal(tkestackv1.ReasonAdopted, actionAdopt, entry{obj: res.Out, group: "Adopted %d pods", note: "Adopted pod " + res.Out.Name})
	}
	return adopted, nil
}

// patchOwnerRefs replaces a pod's ownerReferences, guarded by its resourceVersion.
func (r *Reconciler) patchOwnerRefs(ctx context.Context, pod *corev1.Pod, refs []metav1.OwnerReference) (*corev1.Pod, error) {
	out := pod.DeepCopy()
	out.OwnerReferences = refs
	if err := r.cfg.Client.Patch(ctx, out, client.MergeFromWithOptions(pod, client.MergeFromWithOptimisticLock{})); err != nil {
		return nil, err
	}
	return out, nil
}

// namesTaken adds to the ids whose name a malformed owned pod holds the desired-running ids without a pod
// whose name <tapp>-<id> is held in the cache by a pod of another owner or an orphan that was not adopted
// . Ids with a pending expectation are skipped; nothing is looked up when no pod may be created.
func (r *Reconciler) namesTaken(ctx context.Context, rn *run, pods core.Pods, taken, expecting map[int]bool) (map[int]bool, error) {
	if rn.pass.Settings.Blocked || rn.pass.Settings.Deleting {
		return taken, nil
	}
	for _, id := range rn.pass.Missing(pods) {
		if expecting[id] || taken[id] {
			continue
		}
		pod := &corev1.Pod{}
		err := r.cfg.Client.Get(ctx, client.ObjectKey{Namespace: rn.app.Namespace, Name: core.PodName(rn.app.Name, id)}, pod)
		switch {
		case apierrors.IsNotFound(err):
		case err != nil:
			return nil, fmt.Errorf("looking up pod %s: %w", core.PodName(rn.app.Name, id), err)
		default:
			taken[id] = true
		}
	}
	return taken, nil
}

// nodesOf returns the cached nodes of the TApp's terminating pods, which decide force deletion. Only
// looked up when spec.forceDeletePod is set: otherwise they decide nothing.
func (r *Reconciler) nodesOf(ctx context.Context, app *tkestackv1.TApp, pods core.Pods) (map[string]*corev1.Node, error) {
	nodes := map[string]*corev1.Node{}
	if !app.Spec.ForceDeletePod {
		return nodes, nil
	}
	for _, pod := range pods {
		name := pod.Spec.NodeName
		if pod.DeletionTimestamp == nil || name == "" {
			continue
		}
		if _, seen := nodes[name]; seen {
			continue
		}
		node := &corev1.Node{}
		err := r.cfg.Client.Get(ctx, client.ObjectKey{Name: name}, node)
		switch {
		case apierrors.IsNotFound(err):
		case err != nil:
			return nil, fmt.Errorf("getting node %s: %w", name, err)
		default:
			nodes[name] = node
		}
	}
	return nodes, nil
}
