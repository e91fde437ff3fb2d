package tapp

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/drover-dev/drover/internal/webhook"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	tkestackv1 "github.com/drover-dev/drover/api/tkestack/apps/v1"
	"github.com/drover-dev/drover/internal/tapp/core"
)

// The validating webhook sends each pod template as a dry-run pod create, with the manager's identity.
//
// +kubebuilder:rbac:groups="",resources=pods,verbs=create

const (
	// tappDryRunID is the instance id the dry-run pods are rendered for. The rules that depend on the id
	// (claim names, hostnames) are the structural rules' to check, for the highest id.
	tappDryRunID = 0
	// tappDryRunName stands for the TApp's name while it has none (created with generateName).
	tappDryRunName = "tapp"
)

// tappDryRun is one template of a TApp being dry-run: its name ("default" for spec.template), its field
// path in the TApp, its resolved form and the pod rendered from it.
type tappDryRun struct {
	name string
	path *field.Path
	tpl  *core.Template
	pod  *corev1.Pod
}

// dryRunTemplates applies Kubernetes' own pod validation, which drover cannot import, to the TApp's templates:
// for each, the pod the controller would create from it (core.NewPod, for instance 0) is sent as a
// server-side dry-run create in the TApp's namespace, with generateName (on UPDATE a real pod with the
// rendered name may exist) and without ownerReferences (on CREATE the TApp has no UID yet). The dry runs go
// concurrently and bounded, within one budget (webhook.RunDryRuns).
//
// The API server's Invalid causes are reported under the template's path (templateCauseError), each template
// for itself, in the order of templatesToDryRun. Any other failure (timeout, unavailable, Forbidden by an
// admission plugin such as Pod Security, a terminating namespace) admits the request with a warning: the
// controller reports real errors when it creates the pods.
//
// oldApp is nil on CREATE. On UPDATE only the templates that are new or changed are sent, so a TApp stored
// before keeps being editable (ratcheting, as with drover's other rules).
func (v Validator) dryRunTemplates(ctx context.Context, app, oldApp *tkestackv1.TApp,
	errs field.ErrorList) (field.ErrorList, admission.Warnings) {
	if v.DryRun == nil {
		return nil, nil
	}
	runs := tappDryRunPods(ctx, app, templatesToDryRun(app, oldApp, errs), errs)
	if len(runs) == 0 {
		return nil, nil
	}
	objs := make([]client.Object, len(runs))
	for i := range runs {
		objs[i] = runs[i].pod
	}
	results, err := webhook.RunDryRuns(ctx, v.DryRun, objs, false)
	var warnings admission.Warnings
	if err != nil {
		warnings = webhook.DryRunWarnings("the pod templates were", "the pods", err)
	}
	claims := sets.New[string]()
	for i := range app.Spec.VolumeClaimTemplates {
		claims.Insert(app.Spec.VolumeClaimTemplates[i].Name)
	}
	var out field.ErrorList
	for i, res := range results {
		if res == nil {
			continue
		}
		for _, c := range res.Causes {
			out = append(out, templateCauseError(&runs[i], c, claims, app.Spec.ServiceName != ""))
		}
	}
	return out, warnings
}

// templatesToDryRun returns the templates to check, spec.template first, then the templatePool entries by
// name, each with its name and path (the other fields are filled in by tappDryRunPods):
//   - spec.template when it has a container: without one it is either unused (a TApp whose instances all use
//     pool templates may keep it for the labels of its selector) or rejected by the structural rules;
//   - every templatePool entry but one named "default", which is never used (the name stands for
//     spec.template);
//   - none with structural errors of its own (errs), which the API server would only repeat;
//   - on UPDATE (oldApp not nil), only the templates that are new or changed.
func templatesToDryRun(app, oldApp *tkestackv1.TApp, errs field.ErrorList) []tappDryRun {
	var out []tappDryRun
	spec := &app.Spec
	path := field.NewPath("spec", "template")
	if len(spec.Template.Spec.Containers) > 0 && !webhook.HasErrorAt(errs, path.String()) &&
		(oldApp == nil || !equality.Semantic.DeepEqual(oldApp.Spec.Template, spec.Template)) {
		out = append(out, tappDryRun{name: tkestackv1.DefaultTemplateName, path: path})
	}
	for _, name := range sortedKeys(spec.TemplatePool) {
		p := field.NewPath("spec", "templatePool").Key(name)
		if name == tkestackv1.DefaultTemplateName || webhook.HasErrorAt(errs, p.String()) {
			continue
		}
		if oldApp != nil {
			if old, ok := oldApp.Spec.TemplatePool[name]; ok && equality.Semantic.DeepEqual(old, spec.TemplatePool[name]) {
				continue
			}
		}
		out = append(out, tappDryRun{name: name, path: p})
	}
	return out
}

// tappDryRunPods renders the pod of each template in runs as the controller does (core.NewPass resolves and
// hashes the templates, core.NewPod builds the pod), ready to be sent: generateName, the TApp's namespace, no
// ownerReferences. A field whose own rules failed in errs (serviceName, volumeClaimTemplates) is left out of
// the rendering, so its errors are not reported twice. A template the controller cannot resolve is dropped
// (the controller reports it).
func tappDryRunPods(ctx context.Context, app *tkestackv1.TApp, runs []tappDryRun, errs field.ErrorList) []tappDryRun {
	if len(runs) == 0 {
		return nil
	}
	rendered := *app // shallow: only fields of the copy itself are changed
	rendered.Namespace = webhook.RequestNamespace(ctx, app.Namespace)
	if rendered.Name == "" {
		rendered.Name = tappDryRunName
	}
	if webhook.HasErrorAt(errs, "spec.serviceName") {
		rendered.Spec.ServiceName = ""
	}
	if webhook.HasErrorAt(errs, "spec.volumeClaimTemplates") {
		rendered.Spec.VolumeClaimTemplates = nil
	}
	pass := core.NewPass(&rendered, core.Options{})
	out := runs[:0]
	for _, run := range runs {
		tpl, ok := pass.TemplateByName(run.name)
		if !ok {
			continue
		}
		pod := core.NewPod(&rendered, tappDryRunID, tpl)
		pod.Name, pod.GenerateName = "", rendered.Name+"-"
		pod.OwnerReferences = nil
		run.tpl, run.pod = tpl, pod
		out = append(out, run)
	}
	return out
}

// templateCauseError maps a cause of the API server on the pod of run onto the TApp: a field the template
// supplies (its metadata's labels, annotations and finalizers, and the pod spec) keeps its path below the
// template's; a field drover sets when it renders the pod (name, namespace, hostname and subdomain from
// serviceName, the in-place readiness gate it appends, the volumes of volumeClaimTemplates) is reported at
// the template's path, with the pod's field in the message. claims holds the claim template names.
func templateCauseError(run *tappDryRun, c metav1.StatusCause, claims sets.Set[string], serviceName bool) *field.Error {
	if c.Field == "" || fromTemplate(c.Field, run, claims, serviceName) {
		return webhook.CauseError(run.path, c, "")
	}
	e := webhook.CauseError(run.path, metav1.StatusCause{Type: c.Type, Message: c.Message}, "")
	set := fmt.Sprintf("the pod's %s, which drover sets (not the template)", c.Field)
	if e.Detail == "" {
		e.Detail = set
	} else {
		e.Detail = set + ": " + e.Detail
	}
	return e
}

// fromTemplate reports whether the pod field f comes from run's template rather than from drover's rendering.
func fromTemplate(f string, run *tappDryRun, claims sets.Set[string], serviceName bool) bool {
	switch {
	case webhook.HasFieldPrefix(f, "metadata.labels"), webhook.HasFieldPrefix(f, "metadata.annotations"),
		webhook.HasFieldPrefix(f, "metadata.finalizers"):
		return true
	case webhook.HasFieldPrefix(f, "spec.hostname"), webhook.HasFieldPrefix(f, "spec.subdomain"):
		return !serviceName
	case !webhook.HasFieldPrefix(f, "spec"):
		return false // name, generateName, namespace
	}
	if i, ok := fieldIndex(f, "spec.readinessGates"); ok {
		return i < len(run.tpl.Spec.Spec.ReadinessGates)
	}
	if i, ok := fieldIndex(f, "spec.volumes"); ok {
		return i >= len(run.pod.Spec.Volumes) || !claims.Has(run.pod.Spec.Volumes[i].Name)
	}
	return true
}

// fieldIndex returns i when f is list[i] or a field below it.
func fieldIndex(f, list string) (int, bool) {
	rest, ok := strings.CutPrefix(f, list+"[")
	if !ok {
		return 0, false
	}
	end := strings.IndexByte(rest, ']')
	if end < 0 {
		return 0, false
	}
	i, err := strconv.Atoi(rest[:end])
	return i, err == nil
}
