package yurtappdaemon

import (
	"context"
	"fmt"

	"github.com/drover-dev/drover/internal/webhook"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	openyurtv1alpha1 "github.com/drover-dev/drover/api/openyurt/apps/v1alpha1"
	"github.com/drover-dev/drover/internal/yurtappdaemon/render"
)

// The validating webhook sends each child as a dry-run create, with the manager's identity.
//
// +kubebuilder:rbac:groups=apps,resources=deployments;statefulsets,verbs=create

const (
	// dryRunPool is the placeholder pool the template is rendered for in the dry runs, as in the tweak validation.
	dryRunPool = render.PlaceholderPoolName
	// dryRunRevision is the revision label of the dry-run children; any valid label value does.
	dryRunRevision = "dry-run"
)

// dryRunTemplate applies Kubernetes' own validation of the template, which drover cannot import. The
// child is rendered for a placeholder pool, with generateName and without ownerReferences (on CREATE the
// owner has no UID yet), and sent as a server-side dry-run create in the owner's namespace: once as the
// template renders, and once more for each tweak with images or patches, with that tweak applied. The dry
// runs go concurrently and bounded, within one budget (webhook.RunDryRuns); the errors keep the order of the runs.
//
// The API server's Invalid causes are reported under spec.workloadTemplate.<member>.; a cause that appears
// only with a tweak applied says which. An accepted child is compared with the one the API server returned:
// a field it dropped (a feature it does not enable) would keep the child from ever matching its rendering,
// so it is reported as Forbidden at the template's field. Any other failure (timeout, unavailable,
// forbidden) admits the request with a warning, and the controller reports real errors when it creates the
// children.
//
// oldObj is nil on CREATE. On UPDATE the dry runs happen only when the template or a tweak changed, and the
// rule is ratcheted like drover's other rules: the base run is reported only when the template changed, and
// a tweak run only when the template or that tweak changed. Nothing is sent while errs holds errors of the
// selector or the pod labels (see blocksDryRun), and a tweak with errors of its own is skipped.
func (v OwnerValidator[T]) dryRunTemplate(ctx context.Context, obj, oldObj openyurtv1alpha1.Owner,
	errs field.ErrorList) (field.ErrorList, admission.Warnings) {
	spec := obj.DaemonSpec()
	member, ok := templateMember(spec)
	if v.DryRun == nil || !ok || blocksDryRun(errs, member) {
		return nil, nil
	}
	tmplChanged := oldObj == nil || templateChanged(oldObj, obj)
	tweaks := tweaksToDryRun(spec, oldObj, errs, tmplChanged)
	if !tmplChanged && len(tweaks) == 0 {
		return nil, nil
	}

	// The first child is the template as it renders, one more per tweak. The specs rendered are shallow
	// copies: Render copies what it takes from a spec and never changes it (the controller renders from the
	// cache), so the largest owner is not copied once per tweak.
	base := *spec
	base.WorkloadTweaks = nil
	child := v.renderDryRunChild(ctx, obj, &base)
	if child == nil {
		return nil, nil // a render failure is the structural rules' to report
	}
	children := []client.Object{child}
	var sent []int // the tweak of each child after the first
	for _, i := range tweaks {
		tweaked := *spec
		tweak := spec.WorkloadTweaks[i]
		tweak.Pools, tweak.NodePoolSelector = []string{dryRunPool}, nil
		tweaked.WorkloadTweaks = []openyurtv1alpha1.WorkloadTweak{tweak}
		if c := v.renderDryRunChild(ctx, obj, &tweaked); c != nil {
			children = append(children, c)
			sent = append(sent, i)
		}
	}
	results, err := webhook.RunDryRuns(ctx, v.DryRun, children, true)
	var warnings admission.Warnings
	if err != nil {
		warnings = webhook.DryRunWarnings("the workload template was", "the children", err)
	}

	return ownerDryRunErrors(field.NewPath("spec", "workloadTemplate", member), results, sent, tmplChanged), warnings
}

// tweaksToDryRun returns the indexes of the tweaks to dry-run: those with images or patches and without
// errors of their own in errs, and on UPDATE (oldObj not nil) only when the template or the tweak changed.
func tweaksToDryRun(spec *openyurtv1alpha1.YurtAppDaemonSpec, oldObj openyurtv1alpha1.Owner, errs field.ErrorList,
	tmplChanged bool) []int {
	var tweaks []int
	for i := range spec.WorkloadTweaks {
		t := &spec.WorkloadTweaks[i]
		if len(t.Tweaks.ContainerImages) == 0 && len(t.Tweaks.Patches) == 0 ||
			webhook.HasErrorAt(errs, fmt.Sprintf("spec.workloadTweaks[%d]", i)) {
			continue
		}
		if tmplChanged || tweakChanged(oldObj, i, t) {
			tweaks = append(tweaks, i)
		}
	}
	return tweaks
}

// ownerDryRunErrors maps the causes of the dry runs onto the template at prefix, in the order of the runs:
// results[0] is the plain template's (reported only when tmplChanged), results[j] that of tweak sent[j-1].
// A cause already found by an earlier run is not reported again; one found only with a tweak says which.
func ownerDryRunErrors(prefix *field.Path, results []*webhook.DryRunResult, sent []int, tmplChanged bool) field.ErrorList {
	seen := sets.New[string]()
	var out field.ErrorList
	for j, res := range results {
		if res == nil {
			continue
		}
		note := ""
		if j > 0 {
			note = fmt.Sprintf("with spec.workloadTweaks[%d] applied", sent[j-1])
		}
		for _, c := range res.Causes {
			key := webhook.CauseKey(c)
			if seen.Has(key) {
				continue
			}
			seen.Insert(key)
			if j > 0 || tmplChanged {
				out = append(out, webhook.CauseError(prefix, c, note))
			}
		}
	}
	return out
}

// renderDryRunChild renders the child of obj for the placeholder pool with spec, ready to be sent as a
// dry-run create: generateName, the owner's namespace, no ownerReferences. It returns nil when the child
// cannot be rendered (the structural rules report that).
func (v OwnerValidator[T]) renderDryRunChild(ctx context.Context, obj openyurtv1alpha1.Owner,
	spec *openyurtv1alpha1.YurtAppDaemonSpec) client.Object {
	namespace := webhook.RequestNamespace(ctx, obj.GetNamespace())
	res, err := render.Render(render.Input{
		// No UID: the child gets no ownerReference.
		Owner:     render.OwnerRef{APIVersion: v.GVK.GroupVersion().String(), Kind: v.GVK.Kind, Name: obj.GetName()},
		Namespace: namespace,
		Spec:      spec,
		Pool:      render.Pool{Name: dryRunPool},
		Revision:  dryRunRevision,
	})
	if err != nil || res == nil || res.Body == nil {
		return nil
	}
	child := res.Body.DeepCopy()
	child.SetNamespace(namespace)
	child.SetOwnerReferences(nil)
	child.SetResourceVersion("")
	return child
}

// templateMember returns the JSON name of the one template member set.
func templateMember(spec *openyurtv1alpha1.YurtAppDaemonSpec) (string, bool) {
	switch spec.TemplateType() {
	case openyurtv1alpha1.DeploymentTemplateType:
		return "deploymentTemplate", true
	case openyurtv1alpha1.StatefulSetTemplateType:
		return "statefulSetTemplate", true
	default:
		return "", false
	}
}

// tweakChanged reports whether tweak i is new or differs from the old object's tweak i; oldObj is nil on
// CREATE.
func tweakChanged(oldObj openyurtv1alpha1.Owner, i int, tweak *openyurtv1alpha1.WorkloadTweak) bool {
	if oldObj == nil {
		return true
	}
	old := oldObj.DaemonSpec().WorkloadTweaks
	return i >= len(old) || !equality.Semantic.DeepEqual(old[i], *tweak)
}

// blocksDryRun reports whether errs make the dry run pointless: no single template member, or a bad
// selector or pod labels, which the render copies into the child, so the API server would only
// repeat them. Other errors, such as the nodeSelector pool-key rule (the render overrides that key) or the StatefulSet
// immutability rule,
// leave the dry run meaningful, so its errors accumulate with theirs.
func blocksDryRun(errs field.ErrorList, member string) bool {
	labels := field.NewPath("spec", "workloadTemplate", member, "spec", "template", "metadata", "labels").String()
	for _, e := range errs {
		if e.Field == "spec.workloadTemplate" || webhook.HasFieldPrefix(e.Field, "spec.selector") || webhook.HasFieldPrefix(e.Field, labels) {
			return true
		}
	}
	return false
}
