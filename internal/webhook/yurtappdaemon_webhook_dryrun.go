package webhook

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	openyurtv1alpha1 "github.com/drover-dev/drover/api/openyurt/apps/v1alpha1"
	"github.com/drover-dev/drover/internal/controller/yurtappdaemon/render"
)

const (
	// dryRunPool is the placeholder pool the template is rendered for in the dry runs, as in the tweak validation.
	dryRunPool = render.PlaceholderPoolName
	// dryRunRevision is the revision label of the dry-run children; any valid label value does.
	dryRunRevision = "dry-run"
)

// dryRunTemplate applies Kubernetes' own validation of the template, which drover cannot import. The
// child is rendered for a placeholder pool, with generateName and without ownerReferences (on CREATE the
// owner has no UID yet), and sent as a server-side dry-run create in the owner's namespace: once as the
// template renders, and once more for each tweak with images or patches, with that tweak applied.
//
// The API server's Invalid causes are reported under spec.workloadTemplate.<member>.; a cause that appears
// only with a tweak applied says which. Any other failure (timeout, unavailable, forbidden) admits the request
// with a warning, and the controller reports real errors when it creates the children.
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
	var tweaks []int
	for i := range spec.WorkloadTweaks {
		t := &spec.WorkloadTweaks[i]
		if len(t.Tweaks.ContainerImages) == 0 && len(t.Tweaks.Patches) == 0 ||
			hasErrorAt(errs, fmt.Sprintf("spec.workloadTweaks[%d]", i)) {
			continue
		}
		if tmplChanged || tweakChanged(oldObj, i, t) {
			tweaks = append(tweaks, i)
		}
	}
	if !tmplChanged && len(tweaks) == 0 {
		return nil, nil
	}

	ctx, cancel := context.WithTimeout(ctx, dryRunBudget)
	defer cancel()
	prefix := field.NewPath("spec", "workloadTemplate", member)
	seen := sets.New[string]()
	var out field.ErrorList

	base := spec.DeepCopy()
	base.WorkloadTweaks = nil
	status, err := v.dryRunCreate(ctx, obj, base)
	if err != nil {
		return nil, dryRunWarnings(err)
	}
	for _, c := range statusCauses(status) {
		seen.Insert(causeKey(c))
		if tmplChanged {
			out = append(out, causeError(prefix, c, ""))
		}
	}
	for _, i := range tweaks {
		tweaked := spec.DeepCopy()
		tweak := tweaked.WorkloadTweaks[i]
		tweak.Pools, tweak.NodePoolSelector = []string{dryRunPool}, nil
		tweaked.WorkloadTweaks = []openyurtv1alpha1.WorkloadTweak{tweak}
		status, err := v.dryRunCreate(ctx, obj, tweaked)
		if err != nil {
			return out, dryRunWarnings(err)
		}
		for _, c := range statusCauses(status) {
			if key := causeKey(c); !seen.Has(key) {
				seen.Insert(key)
				out = append(out, causeError(prefix, c, fmt.Sprintf("with spec.workloadTweaks[%d] applied", i)))
			}
		}
	}
	return out, nil
}

// dryRunCreate renders the child of obj for the placeholder pool with spec and sends it as a dry-run create.
// It returns the API server's status for an Invalid rejection, nil when the child was accepted or could not
// be rendered (the structural rules report that), and an error for any other failure.
func (v OwnerValidator[T]) dryRunCreate(ctx context.Context, obj openyurtv1alpha1.Owner,
	spec *openyurtv1alpha1.YurtAppDaemonSpec) (*metav1.Status, error) {
	namespace := obj.GetNamespace()
	if namespace == "" { // not yet filled in from the request URL
		if req, err := admission.RequestFromContext(ctx); err == nil {
			namespace = req.Namespace
		}
	}
	res, err := render.Render(render.Input{
		// No UID: the child gets no ownerReference.
		Owner:     render.OwnerRef{APIVersion: v.GVK.GroupVersion().String(), Kind: v.GVK.Kind, Name: obj.GetName()},
		Namespace: namespace,
		Spec:      spec,
		Pool:      render.Pool{Name: dryRunPool},
		Revision:  dryRunRevision,
	})
	if err != nil || res == nil || res.Body == nil {
		return nil, nil //nolint:nilerr // a render failure is the structural rules' to report
	}
	child := res.Body.DeepCopy()
	child.SetNamespace(namespace)
	child.SetOwnerReferences(nil)
	child.SetResourceVersion("")
	err = v.DryRun.Create(ctx, child, client.DryRunAll)
	var apiStatus apierrors.APIStatus
	switch {
	case err == nil:
		return nil, nil
	case apierrors.IsInvalid(err) && errors.As(err, &apiStatus):
		status := apiStatus.Status()
		return &status, nil
	default:
		return nil, fmt.Errorf("dry-run create of the %s: %w", child.GetKind(), err)
	}
}

// dryRunWarnings turns a dry-run failure that is not Invalid into an admission warning.
func dryRunWarnings(err error) admission.Warnings {
	return admission.Warnings{fmt.Sprintf(
		"the workload template was not checked by Kubernetes (%v); the controller reports any error when it creates the children", err)}
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
		if e.Field == "spec.workloadTemplate" || hasFieldPrefix(e.Field, "spec.selector") || hasFieldPrefix(e.Field, labels) {
			return true
		}
	}
	return false
}

// hasErrorAt reports whether errs holds an error at path or below it.
func hasErrorAt(errs field.ErrorList, path string) bool {
	for _, e := range errs {
		if hasFieldPrefix(e.Field, path) {
			return true
		}
	}
	return false
}

// statusCauses returns the causes of an Invalid status; one without causes gives one cause for the whole
// object.
func statusCauses(status *metav1.Status) []metav1.StatusCause {
	if status == nil {
		return nil
	}
	if status.Details != nil && len(status.Details.Causes) > 0 {
		return status.Details.Causes
	}
	return []metav1.StatusCause{{Type: metav1.CauseTypeFieldValueInvalid, Message: status.Message}}
}

func causeKey(c metav1.StatusCause) string {
	return string(c.Type) + "\x00" + c.Field + "\x00" + c.Message
}

// fieldErrorTypes are the cause types the API server produces from field errors.
var fieldErrorTypes = sets.New(field.ErrorTypeNotFound, field.ErrorTypeRequired, field.ErrorTypeDuplicate,
	field.ErrorTypeInvalid, field.ErrorTypeNotSupported, field.ErrorTypeForbidden, field.ErrorTypeTooLong,
	field.ErrorTypeTooMany, field.ErrorTypeInternal, field.ErrorTypeTypeInvalid, field.ErrorTypeTooShort,
	field.ErrorTypeTooFew)

// causeError maps an API server cause on the child onto the owner's template: its field path gets prefix, and
// its message is kept as it is (with note appended). The cause's message already renders the bad value, so the
// error carries none of its own.
func causeError(prefix *field.Path, c metav1.StatusCause, note string) *field.Error {
	typ := field.ErrorType(c.Type)
	detail := c.Message
	if fieldErrorTypes.Has(typ) {
		switch {
		case detail == typ.String():
			detail = ""
		case strings.HasPrefix(detail, typ.String()+": "):
			detail = strings.TrimPrefix(detail, typ.String()+": ")
		}
	} else {
		typ = field.ErrorTypeInvalid
	}
	switch {
	case note == "":
	case detail == "":
		detail = note
	default:
		detail += " (" + note + ")"
	}
	path := prefix.String()
	if c.Field != "" {
		path += "." + c.Field
	}
	return &field.Error{Type: typ, Field: path, BadValue: field.OmitValueType{}, Detail: detail}
}
