package persistentpodstate

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kruisev1alpha1 "github.com/drover-dev/drover/api/kruise/apps/v1alpha1"
	kruisev1beta1 "github.com/drover-dev/drover/api/kruise/apps/v1beta1"
	"github.com/drover-dev/drover/internal/persistentpodstate/core"
	"github.com/drover-dev/drover/internal/persistentpodstate/whitelist"
	"github.com/drover-dev/drover/internal/preview"
)

// kruiseStatefulSetVersion is the version the preview reads Advanced StatefulSets in: served by every
// OpenKruise release that serves PersistentPodState.
const kruiseStatefulSetVersion = "v1beta1"

// PreviewOptions say where the preview finds the custom-workload whitelist drover will use.
type PreviewOptions struct {
	// WhitelistConfigMap is drover's whitelist ConfigMap (the manager's --pps-whitelist-configmap in its
	// namespace); unset, or absent from the cluster, means no custom kind is allowed.
	WhitelistConfigMap types.NamespacedName
}

// Preview computes, reading only, what drover's first passes would do to the PersistentPodStates of
// namespace ("" for every namespace) as OpenKruise left them: the status records drover keeps, adds,
// changes or removes (with the reason the controller's own Compute gives), the generated PPS whose spec its
// generator rewrites, and the PPS it leaves alone (a target kind drover does not track). drover never
// changes a running pod: each pod is kept, and is steered by its record only when it is created again.
//
// The objects are read in v1beta1, or in v1alpha1 where the CRD does not serve v1beta1 (OpenKruise up to
// 1.9), so the preview runs before drover's CRD replaces OpenKruise's.
func Preview(ctx context.Context, c client.Reader, namespace string, opts PreviewOptions) ([]preview.Report, error) {
	all, err := previewList(ctx, c, namespace)
	if err != nil {
		return nil, err
	}
	allowed, notice, err := previewWhitelist(ctx, c, opts.WhitelistConfigMap)
	if err != nil {
		return nil, err
	}
	nodes := &corev1.NodeList{}
	if err := c.List(ctx, nodes); err != nil {
		return nil, fmt.Errorf("listing nodes: %w", err)
	}
	labels := make(map[string]map[string]string, len(nodes.Items))
	for i := range nodes.Items {
		labels[nodes.Items[i].Name] = nodes.Items[i].Labels
	}
	pods := &corev1.PodList{}
	if err := c.List(ctx, pods, client.InNamespace(namespace)); err != nil {
		return nil, fmt.Errorf("listing pods: %w", err)
	}
	byController := map[types.UID][]*corev1.Pod{}
	for i := range pods.Items {
		if ref := metav1.GetControllerOfNoCopy(&pods.Items[i]); ref != nil {
			byController[ref.UID] = append(byController[ref.UID], &pods.Items[i])
		}
	}
	f := &Finder{Reader: c, Whitelist: func() *whitelist.Snapshot { return allowed }}
	out := make([]preview.Report, 0, len(all))
	for _, hub := range all {
		r, err := previewPPS(ctx, f, hub, byController, labels)
		if err != nil {
			return nil, err
		}
		if notice != "" {
			r.Notices = append(r.Notices, notice)
		}
		out = append(out, r)
	}
	return out, nil
}

// previewList lists the PersistentPodStates of namespace as the hub type: in v1beta1, or in v1alpha1 (converted)
// when the API server does not serve v1beta1.
func previewList(ctx context.Context, c client.Reader, namespace string) ([]*kruisev1beta1.PersistentPodState, error) {
	hubs := &kruisev1beta1.PersistentPodStateList{}
	err := c.List(ctx, hubs, client.InNamespace(namespace))
	if err == nil {
		out := make([]*kruisev1beta1.PersistentPodState, len(hubs.Items))
		for i := range hubs.Items {
			out[i] = &hubs.Items[i]
		}
		return out, nil
	}
	if !meta.IsNoMatchError(err) && !apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("listing PersistentPodStates (apps.kruise.io/v1beta1): %w", err)
	}
	list := &kruisev1alpha1.PersistentPodStateList{}
	if err := c.List(ctx, list, client.InNamespace(namespace)); err != nil {
		return nil, fmt.Errorf("listing PersistentPodStates (apps.kruise.io/v1alpha1): %w", err)
	}
	out := make([]*kruisev1beta1.PersistentPodState, len(list.Items))
	for i := range list.Items {
		out[i] = &kruisev1beta1.PersistentPodState{}
		if err := list.Items[i].ConvertTo(out[i]); err != nil {
			return nil, fmt.Errorf("converting PersistentPodState %s/%s: %w", list.Items[i].Namespace, list.Items[i].Name, err)
		}
	}
	return out, nil
}

// previewWhitelist reads drover's whitelist ConfigMap; a missing one allows no custom kind, and says so.
func previewWhitelist(ctx context.Context, c client.Reader, key types.NamespacedName) (*whitelist.Snapshot, string, error) {
	if key.Name == "" {
		return whitelist.Empty(), "", nil
	}
	cm := &corev1.ConfigMap{}
	switch err := c.Get(ctx, key, cm); {
	case apierrors.IsNotFound(err):
		return whitelist.Empty(), "", nil
	case err != nil:
		return nil, "", fmt.Errorf("reading drover's whitelist ConfigMap %s: %w", key, err)
	}
	snap, err := whitelist.ParseConfigMap(cm)
	if err != nil {
		return whitelist.Empty(), fmt.Sprintf("drover's whitelist ConfigMap %s does not parse (%v): no custom kind is tracked", key, err), nil
	}
	return snap, "", nil
}

// previewPPS plans one PPS: its generated spec, then its status records against the target's pods.
func previewPPS(ctx context.Context, f *Finder, pps *kruisev1beta1.PersistentPodState,
	byController map[types.UID][]*corev1.Pod, labels map[string]map[string]string) (preview.Report, error) {
	r := preview.Report{Owner: "PersistentPodState " + pps.Namespace + "/" + pps.Name}
	gk, err := kruisev1beta1.TargetGroupKind(pps.Spec.TargetRef)
	if err != nil || !Supported(f.Whitelist(), gk) {
		r.Items = append(r.Items, preview.Item{Object: "PersistentPodState " + pps.Name, Effect: preview.Keep,
			Why: fmt.Sprintf("its target kind %s is neither built in (StatefulSet, Advanced StatefulSet, TApp) nor in drover's whitelist: "+
				"drover keeps its records as they are and sets TargetUnavailable (KindNotAllowed) until the kind is whitelisted", gk)})
		return r, nil //nolint:nilerr // an unusable target is part of the report, as it is a condition for the controller
	}
	w, err := previewFind(ctx, f, pps.Namespace, gk, pps.Spec.TargetRef.Name)
	if unavailable := asUnavailable(err); unavailable != nil {
		r.Items = append(r.Items, preview.Item{Object: "PersistentPodState " + pps.Name, Effect: preview.Keep,
			Why: "its target cannot be read (" + unavailable.Message + "): drover keeps its records and sets TargetUnavailable"})
		return r, nil //nolint:nilerr // likewise
	} else if err != nil {
		return r, err
	}
	if w != nil {
		if it, ok := previewGenerated(pps, w); ok {
			r.Items = append(r.Items, it)
		}
	}
	var target *core.Target
	var pods []*corev1.Pod
	if w != nil {
		target = &core.Target{UID: w.UID, Deleting: w.Deleting, Replicas: w.Replicas, Ordinals: w.Ordinals}
		pods = byController[w.UID]
	}
	res := core.Compute(core.Pass{PPS: pps, Target: target, Pods: pods,
		Node: func(name string) (map[string]string, bool) { l, ok := labels[name]; return l, ok }})
	r.Items = append(r.Items, previewRecords(pps.Status.PodStates, res.PodStates, target)...)
	steered := 0
	for _, pod := range pods {
		why := "drover never changes a running pod; when it is created again, drover's pod webhook steers it by its record"
		if _, ok := pod.Annotations[kruisev1beta1.AnnotationInjectedPersistentPodState]; ok {
			steered++
			why = "steered by OpenKruise when it was created; kept as it is"
		}
		r.Items = append(r.Items, preview.Item{Object: "pod " + pod.Name, Effect: preview.Keep, Why: why})
	}
	if len(res.Skipped) > 0 {
		r.Notices = append(r.Notices, fmt.Sprintf("pods %s are Ready on nodes that do not exist: not recorded",
			strings.Join(res.Skipped, ", ")))
	}
	if steered > 0 {
		r.Notices = append(r.Notices, fmt.Sprintf("%d pod(s) carry %s from OpenKruise's webhook; drover adds nothing twice to a pod steered so",
			steered, kruisev1beta1.AnnotationInjectedPersistentPodState))
	}
	return r, nil
}

// previewFind finds the target through the finder for built-in kinds and, for the others, with a direct read
// in the Advanced StatefulSet's or the whitelist entry's version (the manager watches them with informers).
func previewFind(ctx context.Context, f *Finder, namespace string, gk schema.GroupKind, name string) (*Workload, error) {
	if gk == statefulSetGK || gk == tappGK {
		return f.Find(ctx, namespace, gk, name, "")
	}
	gvk, path := gk.WithVersion(kruiseStatefulSetVersion), ""
	if gk != kruiseStatefulSetGK {
		entry, _ := f.Whitelist().Lookup(gk)
		gvk, path = entry.GroupVersionKind(), entry.Replicas()
	}
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	if err := f.Reader.Get(ctx, types.NamespacedName{Namespace: namespace, Name: name}, u); err != nil {
		if meta.IsNoMatchError(err) || gvk.Version == "" {
			return nil, &UnavailableError{Reason: ReasonKindNotServed, Message: fmt.Sprintf("%s is not served in version %q", gk, gvk.Version)}
		}
		return nil, readError(err, gk)
	}
	return unstructuredWorkload(u, gk, path), nil
}

// previewGenerated reports the spec drover's generator writes on a PPS generated from the workload's
// annotations (named like it and controlled by it), when it differs from the stored one.
func previewGenerated(pps *kruisev1beta1.PersistentPodState, w *Workload) (preview.Item, bool) {
	if !ownedBy(pps, w.UID) || pps.Name != w.Object.GetName() {
		return preview.Item{}, false
	}
	desired, _ := DesiredPPS(w.Object, w.APIVersion, w.GK.Kind)
	switch {
	case desired == nil:
		return preview.Item{Object: "PersistentPodState " + pps.Name, Effect: preview.Delete,
			Why: "generated from the workload's annotations, which no longer ask for one: drover's generator deletes it"}, true
	case managedEqual(pps, desired):
		return preview.Item{}, false
	}
	return preview.Item{Object: "PersistentPodState " + pps.Name, Effect: preview.Update,
		Why: fmt.Sprintf("generated from the workload's annotations; drover's generator writes the spec they give: "+
			"required %v, preferred %v, annotations %v (stored: %v, %v, %v). No pod restarts",
			termKeys(desired.Spec.RequiredPersistentTopology), preferredKeys(desired), annotationKeys(desired),
			termKeys(pps.Spec.RequiredPersistentTopology), preferredKeys(pps), annotationKeys(pps))}, true
}

// previewRecords compares the stored records with those drover computes: kept ones, then additions,
// changes and removals, by pod name.
func previewRecords(stored, computed map[string]kruisev1beta1.PodState, target *core.Target) []preview.Item {
	names := slices.Sorted(maps.Keys(stored))
	for name := range computed {
		if _, ok := stored[name]; !ok {
			names = append(names, name)
		}
	}
	out := make([]preview.Item, 0, len(names))
	for _, name := range names {
		before, had := stored[name]
		after, has := computed[name]
		it := preview.Item{Object: "record " + name, Effect: preview.Status}
		switch {
		case had && has && equality.Semantic.DeepEqual(before, after):
			it.Effect, it.Why = preview.Keep, "recorded on node "+before.NodeName+" as drover records it"
		case !had:
			it.Why = fmt.Sprintf("pod %s is Ready on node %s and not recorded yet: drover records it", name, after.NodeName)
		case !has:
			it.Why = removalReason(target)
		default:
			it.Why = fmt.Sprintf("drover records %s where OpenKruise left %s", describeRecord(after), describeRecord(before))
		}
		out = append(out, it)
	}
	return out
}

// removalReason says why Compute dropped a record.
func removalReason(target *core.Target) string {
	switch {
	case target == nil:
		return "the target workload does not exist: drover removes every record"
	case target.Deleting:
		return "the target workload is being deleted: drover removes every record"
	}
	return "its ordinal is outside the workload's replicas and no pod holds the name (a scale-down): drover removes the record"
}

func describeRecord(e kruisev1beta1.PodState) string {
	return fmt.Sprintf("{node %s, labels %v, annotations %v}", e.NodeName, e.NodeTopologyLabels, e.Annotations)
}

func termKeys(t *kruisev1beta1.NodeTopologyTerm) []string {
	if t == nil {
		return nil
	}
	return t.Keys
}

func preferredKeys(pps *kruisev1beta1.PersistentPodState) []string {
	var out []string
	for _, t := range pps.Spec.PreferredPersistentTopology {
		out = append(out, fmt.Sprintf("%d:%s", t.Weight, strings.Join(t.Preference.Keys, ",")))
	}
	return out
}

func annotationKeys(pps *kruisev1beta1.PersistentPodState) []string {
	var out []string
	for _, a := range pps.Spec.PersistentPodAnnotations {
		out = append(out, a.Key)
	}
	return out
}
