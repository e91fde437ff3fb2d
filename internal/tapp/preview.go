package tapp

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tkestackv1 "github.com/drover-dev/drover/api/tkestack/apps/v1"
	"github.com/drover-dev/drover/internal/preview"
	"github.com/drover-dev/drover/internal/tapp/core"
)

// Preview computes, reading only, what drover's first passes would do to the TApps of namespace ("" for
// every namespace) and their pods, as another controller (TKEStack's) or drover left them: the pods it adopts
// or releases, re-stamps, updates in place (with the images), recreates (with the difference), creates or
// deletes, and the TApps' stored values it reads differently from a plain reading. It runs the controller's
// own planning (core.NewPass, Plan) on what it reads, before any budget: every outdated pod is listed,
// though a pass acts on maxUnavailable of them at a time.
func Preview(ctx context.Context, c client.Reader, namespace string, opts core.Options) ([]preview.Report, error) {
	apps := &tkestackv1.TAppList{}
	if err := c.List(ctx, apps, client.InNamespace(namespace)); err != nil {
		return nil, fmt.Errorf("listing TApps: %w", err)
	}
	pods := &corev1.PodList{}
	if err := c.List(ctx, pods, client.InNamespace(namespace)); err != nil {
		return nil, fmt.Errorf("listing pods: %w", err)
	}
	byNamespace := map[string][]*corev1.Pod{}
	for i := range pods.Items {
		p := &pods.Items[i]
		byNamespace[p.Namespace] = append(byNamespace[p.Namespace], p)
	}
	out := make([]preview.Report, 0, len(apps.Items))
	for i := range apps.Items {
		out = append(out, previewTApp(&apps.Items[i], byNamespace[apps.Items[i].Namespace], opts))
	}
	return out, nil
}

// previewTApp plans one TApp against the pods of its namespace.
func previewTApp(app *tkestackv1.TApp, pods []*corev1.Pod, opts core.Options) preview.Report {
	r := preview.Report{Owner: "TApp " + app.Namespace + "/" + app.Name}
	pass := core.NewPass(app, opts)
	sel := pass.Selector()
	var controlled []*corev1.Pod
	taken := map[string]bool{}
	for _, pod := range pods {
		ref := metav1.GetControllerOfNoCopy(pod)
		switch {
		case ref != nil && ref.UID == app.UID && sel != nil && core.ShouldRelease(app, sel, pod):
			r.Items = append(r.Items, preview.Item{Object: "pod " + pod.Name, Effect: preview.Relabel,
				Why: "it no longer matches the selector: drover releases it (removes its owner reference) and leaves it running"})
		case ref != nil && ref.UID == app.UID:
			controlled = append(controlled, pod)
		case sel != nil && core.CanAdopt(app, sel, pod):
			adopted := pod.DeepCopy() // as the adoption leaves it
			adopted.OwnerReferences = append(adopted.OwnerReferences, core.OwnerReference(app))
			controlled = append(controlled, adopted)
			r.Items = append(r.Items, preview.Item{Object: "pod " + pod.Name, Effect: preview.Adopt,
				Why: "an orphan named and labelled as an instance of this TApp: drover adds its owner reference"})
		default:
			taken[pod.Name] = true
		}
	}
	cls := core.ClassifyPods(app, controlled)
	for _, id := range pass.Missing(cls.Pods) {
		if taken[core.PodName(app.Name, id)] {
			cls.NameTaken[id] = true
		}
	}
	plan := pass.Plan(core.Observation{Pods: cls.Pods, Malformed: cls.Malformed, NameTaken: cls.NameTaken,
		Nodes: map[string]*corev1.Node{}, Now: time.Now()})
	for _, a := range plan.Actions {
		r.Items = append(r.Items, previewItem(app, a))
	}
	for _, is := range plan.Issues {
		r.Notices = append(r.Notices, fmt.Sprintf("ReplicaFailure (%s): %s", is.Reason, is.Message))
	}
	r.Notices = append(r.Notices, specNotices(app)...)
	return r
}

// previewItem describes the action planned for one instance, before budgeting.
func previewItem(app *tkestackv1.TApp, a core.InstanceAction) preview.Item {
	name := "pod " + core.PodName(app.Name, a.ID)
	if a.Pod != nil {
		name = "pod " + a.Pod.Name
	}
	it := preview.Item{Object: name, Effect: preview.Keep, Why: a.Why}
	switch a.Wanted {
	case core.ActionRestamp:
		it.Effect = preview.Relabel
	case core.ActionUpdate:
		it.Effect = preview.Relabel
		if a.InPlace {
			it.Effect = preview.UpdateInPlace
		}
	case core.ActionRecreate:
		it.Effect = preview.Recreate
	case core.ActionCreate:
		it.Effect, it.Why = preview.Create, fmt.Sprintf("instance %d has no pod", a.ID)
	case core.ActionDelete, core.ActionForceDelete:
		it.Effect, it.Why = preview.Delete, "not a desired running instance (scaled down, killed or finished)"
	default:
		it.Why = keepReason(a)
	}
	if a.Wanted != a.Action && a.Reason != "" {
		it.Why += fmt.Sprintf(" (%s: a pass acts within the update budget)", a.Reason)
	}
	return it
}

func keepReason(a core.InstanceAction) string {
	switch a.Reason {
	case core.ReasonCurrent:
		return "it carries its template's hash"
	case "":
		return "nothing to do"
	default:
		return a.Reason
	}
}

// specNotices says how drover reads stored values of the spec that another controller tolerated.
func specNotices(app *tkestackv1.TApp) []string {
	var out []string
	spec := &app.Spec
	if name := spec.UpdateStrategy.Template; name != "" {
		if _, ok := spec.TemplateByName(name); !ok {
			out = append(out, fmt.Sprintf("spec.updateStrategy.template names %q, which does not exist: as with TKEStack, no "+
				"instance is on the rolling path and outdated instances update within forceUpdate.maxUnavailable", name))
		}
	}
	if spec.AutoDeleteUnusedTemplate {
		if unused := core.UnusedTemplates(spec); len(unused) > 0 {
			out = append(out, fmt.Sprintf("autoDeleteUnusedTemplate: drover removes the unused templatePool entries %s from the spec",
				strings.Join(unused, ", ")))
		}
	}
	return out
}
