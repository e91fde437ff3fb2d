package tapp

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tkestackv1 "github.com/drover-dev/drover/api/tkestack/apps/v1"
	"github.com/drover-dev/drover/internal/preview"
	"github.com/drover-dev/drover/internal/tapp/core"
)

// LabelRestore puts TKEStack's hash labels back on one pod.
type LabelRestore struct {
	// Pod is the pod as read; the restore is guarded by its resourceVersion.
	Pod    *corev1.Pod
	Hashes core.UpstreamHashes
}

// PlanRollback computes, reading only, what handing the TApps of namespace ("" for all) back to TKEStack's
// controller needs, once drover's TApp controller is stopped. TKEStack decides what to do with a pod by its
// hash labels, which drover rewrote: a pod TKEStack compares with the wrong hashes is recreated. So each pod
// that carries the hashes TKEStack had written (kept by drover in the annotation drover.dev/upstream-hashes)
// gets them back, and so does each pod drover created from a template TKEStack had hashed (another pod of
// the TApp kept those hashes for the same drover hash). A pod whose template TKEStack never hashed (the
// template changed after the switch) cannot get TKEStack's hashes: TKEStack will replace it, which the report
// says.
func PlanRollback(ctx context.Context, c client.Reader, namespace string) ([]preview.Report, []LabelRestore, error) {
	apps := &tkestackv1.TAppList{}
	if err := c.List(ctx, apps, client.InNamespace(namespace)); err != nil {
		return nil, nil, fmt.Errorf("listing TApps: %w", err)
	}
	pods := &corev1.PodList{}
	if err := c.List(ctx, pods, client.InNamespace(namespace)); err != nil {
		return nil, nil, fmt.Errorf("listing pods: %w", err)
	}
	var reports []preview.Report
	var restores []LabelRestore
	for i := range apps.Items {
		r, rs := planTAppRollback(&apps.Items[i], pods.Items)
		reports, restores = append(reports, r), append(restores, rs...)
	}
	return reports, restores, nil
}

func planTAppRollback(app *tkestackv1.TApp, pods []corev1.Pod) (preview.Report, []LabelRestore) {
	r := preview.Report{Owner: "TApp " + app.Namespace + "/" + app.Name}
	var owned []*corev1.Pod
	known := map[string]core.UpstreamHashes{} // drover's template hash → TKEStack's hashes of that template
	for i := range pods {
		pod := &pods[i]
		if ref := metav1.GetControllerOfNoCopy(pod); pod.Namespace != app.Namespace || ref == nil || ref.UID != app.UID {
			continue
		}
		owned = append(owned, pod)
		if h, ok := core.UpstreamHashesOf(pod); ok && h.For != "" {
			known[h.For] = h
		}
	}
	var restores []LabelRestore
	for _, pod := range owned {
		it := preview.Item{Object: "pod " + pod.Name, Effect: preview.Keep}
		hash := pod.Labels[tkestackv1.TAppHashKey]
		h, kept := core.UpstreamHashesOf(pod)
		switch {
		case kept:
			it.Effect, it.Why = preview.Relabel, "TKEStack's hash labels, kept by drover, are put back"
		case core.IsCurrentHashFormat(hash) && known[hash].Template != "":
			h, kept = known[hash], true
			it.Effect, it.Why = preview.Relabel, "created by drover from a template TKEStack had hashed: its hash labels are set"
		case core.IsCurrentHashFormat(hash):
			it.Effect, it.Why = preview.Recreate, "its template changed after the switch, so TKEStack never hashed it: "+
				"TKEStack will recreate this pod once it runs"
		default:
			it.Why = "it carries TKEStack's hash labels already"
		}
		if kept {
			restores = append(restores, LabelRestore{Pod: pod, Hashes: h})
		}
		r.Items = append(r.Items, it)
	}
	return r, restores
}

// ApplyRollback writes the restores: each pod gets TKEStack's two hash labels and loses the annotation that
// kept them, in one merge patch guarded by the resourceVersion it was read at (a pod changed since is
// reported, not overwritten). It returns every failure.
func ApplyRollback(ctx context.Context, c client.Client, restores []LabelRestore) error {
	var errs []error
	for _, rs := range restores {
		patched := rs.Pod.DeepCopy()
		if patched.Labels == nil {
			patched.Labels = map[string]string{}
		}
		patched.Labels[tkestackv1.TAppHashKey] = rs.Hashes.Template
		patched.Labels[tkestackv1.TAppUniqHashKey] = rs.Hashes.Uniq
		delete(patched.Annotations, tkestackv1.UpstreamHashesKey)
		if err := c.Patch(ctx, patched, client.MergeFromWithOptions(rs.Pod, client.MergeFromWithOptimisticLock{})); err != nil {
			errs = append(errs, fmt.Errorf("pod %s/%s: %w", rs.Pod.Namespace, rs.Pod.Name, err))
		}
	}
	return errors.Join(errs...)
}
