package tapp

import (
	"context"
	"net/http"
	"slices"
	"testing"

	"github.com/drover-dev/drover/internal/testutil"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tkestackv1 "github.com/drover-dev/drover/api/tkestack/apps/v1"
)

// invalidPod is the API server's 422 for a pod with the given field errors.
func invalidPod(errs ...*field.Error) error {
	return apierrors.NewInvalid(schema.GroupKind{Kind: "Pod"}, "", errs)
}

// validateTApp runs the TApp validator with the dry runs answered by d; old is nil for CREATE.
func validateTApp(d *testutil.DryRuns[*corev1.Pod], old, app *tkestackv1.TApp) (warnings []string, err error) {
	v := Validator{DryRun: d.Client()}
	if old == nil {
		return v.ValidateCreate(context.Background(), app)
	}
	return v.ValidateUpdate(context.Background(), old, app)
}

// image returns the image of the first container of pod.
func image(pod *corev1.Pod) string {
	if len(pod.Spec.Containers) == 0 {
		return ""
	}
	return pod.Spec.Containers[0].Image
}

// TestTAppDryRunSendsThePodsTheControllerCreates: one dry-run create per template, spec.template first and
// the pool templates by name, of the pod the controller renders for instance 0, with generateName and without
// ownerReferences, in the TApp's namespace.
func TestTAppDryRunSendsThePodsTheControllerCreates(t *testing.T) {
	app := makeTApp(func(a *tkestackv1.TApp) {
		a.Spec.TemplatePool["beta"] = tappPodTemplate("nginx:3")
		a.Spec.TemplatePool[tkestackv1.DefaultTemplateName] = tappPodTemplate("never-used:1")
		a.Spec.ServiceName = "web"
		a.Spec.VolumeClaimTemplates = []corev1.PersistentVolumeClaim{claim("data")}
	})
	d := &testutil.DryRuns[*corev1.Pod]{}
	if _, err := validateTApp(d, nil, app); err != nil {
		t.Fatalf("validate = %v, want allowed", err)
	}
	var images []string
	for i, pod := range d.Objs {
		images = append(images, image(pod))
		co := &client.CreateOptions{}
		co.ApplyOptions(d.Opts[i])
		if diff := cmp.Diff([]string{metav1.DryRunAll}, co.DryRun); diff != "" {
			t.Errorf("dryRun (-want +got):\n%s", diff)
		}
		got := []string{pod.Name, pod.GenerateName, pod.Namespace, pod.Labels[tkestackv1.TAppInstanceKey], pod.Labels["app"],
			pod.Spec.Hostname, pod.Spec.Subdomain}
		if diff := cmp.Diff([]string{"", "web-", "ns", "0", "web", "web-0", "web"}, got); diff != "" {
			t.Errorf("pod %d: name, generateName, namespace, instance label, template label, hostname, subdomain (-want +got):\n%s", i, diff)
		}
		if len(pod.OwnerReferences) != 0 {
			t.Errorf("pod %d: ownerReferences = %v, want none", i, pod.OwnerReferences)
		}
		if pod.Labels[tkestackv1.TAppHashKey] == "" || pod.Labels[tkestackv1.TAppUniqHashKey] == "" {
			t.Errorf("pod %d: labels = %v, want the hash labels", i, pod.Labels)
		}
		if len(pod.Spec.ReadinessGates) != 1 || len(pod.Spec.Volumes) != 1 ||
			pod.Spec.Volumes[0].PersistentVolumeClaim.ClaimName != "data-web-0" {
			t.Errorf("pod %d: readiness gates %v, volumes %v; want the in-place gate and the claim of instance 0",
				i, pod.Spec.ReadinessGates, pod.Spec.Volumes)
		}
	}
	// The runs go concurrently; the order of arrival is not the order of the errors.
	if diff := cmp.Diff([]string{"nginx:1", "nginx:2", "nginx:3"}, sortedStrings(images)); diff != "" {
		t.Errorf("images sent (-want +got):\n%s", diff)
	}
}

func TestTAppDryRunMapsCauses(t *testing.T) {
	containerImage := field.NewPath("spec", "containers").Index(0).Child("image")
	tests := map[string]struct {
		edit         func(*tkestackv1.TApp)
		respond      func(*corev1.Pod) error
		wantMessages []string
	}{
		"a pod spec field maps below the template, each template for itself, spec.template first": {
			respond: func(*corev1.Pod) error { return invalidPod(field.Required(containerImage, "")) },
			wantMessages: []string{
				"spec.template.spec.containers[0].image: Required value",
				"spec.templatePool[canary].spec.containers[0].image: Required value",
			},
		},
		"several errors of one template are reported together": {
			edit: func(a *tkestackv1.TApp) { delete(a.Spec.TemplatePool, "canary") },
			respond: func(*corev1.Pod) error {
				return invalidPod(
					field.Invalid(field.NewPath("spec", "containers").Index(0).Child("name"), "-x", "a lowercase RFC 1123 label must ..."),
					field.Invalid(field.NewPath("spec", "nodeSelector"), "a b", "a valid label must ..."),
				)
			},
			wantMessages: []string{
				`spec.template.spec.containers[0].name: Invalid value: "-x": a lowercase RFC 1123 label must ...`,
				`spec.template.spec.nodeSelector: Invalid value: "a b": a valid label must ...`,
			},
		},
		"pod metadata maps to the template's metadata": {
			respond: func(pod *corev1.Pod) error {
				if image(pod) != "nginx:2" {
					return nil
				}
				return invalidPod(field.Invalid(field.NewPath("metadata", "annotations"), "", "annotations are too long"))
			},
			wantMessages: []string{`spec.templatePool[canary].metadata.annotations: Invalid value: "": annotations are too long`},
		},
		"a field drover sets is reported at the template with the pod's field": {
			edit: func(a *tkestackv1.TApp) {
				delete(a.Spec.TemplatePool, "canary")
				a.Spec.ServiceName = "web"
				a.Spec.VolumeClaimTemplates = []corev1.PersistentVolumeClaim{claim("data")}
				a.Spec.Template.Spec.ReadinessGates = []corev1.PodReadinessGate{{ConditionType: "a/b"}}
				a.Spec.Template.Spec.Volumes = []corev1.Volume{{Name: "cache"}}
			},
			respond: func(*corev1.Pod) error {
				return invalidPod(
					field.Invalid(field.NewPath("spec", "hostname"), "web-0", "bad hostname"),
					field.Invalid(field.NewPath("spec", "readinessGates").Index(1).Child("conditionType"), "x", "bad gate"),
					field.Invalid(field.NewPath("spec", "readinessGates").Index(0).Child("conditionType"), "a/b", "bad gate"),
					field.Invalid(field.NewPath("spec", "volumes").Index(1).Child("name"), "data", "bad claim volume"),
					field.Required(field.NewPath("spec", "volumes").Index(0).Child("emptyDir"), "a volume type is required"),
					field.Invalid(field.NewPath("metadata", "generateName"), "web-", "bad name"),
				)
			},
			wantMessages: []string{
				`spec.template: Invalid value: the pod's spec.hostname, which drover sets (not the template): "web-0": bad hostname`,
				`spec.template: Invalid value: the pod's spec.readinessGates[1].conditionType, which drover sets (not the template): "x": bad gate`,
				`spec.template.spec.readinessGates[0].conditionType: Invalid value: "a/b": bad gate`,
				`spec.template: Invalid value: the pod's spec.volumes[1].name, which drover sets (not the template): "data": bad claim volume`,
				"spec.template.spec.volumes[0].emptyDir: Required value: a volume type is required",
				`spec.template: Invalid value: the pod's metadata.generateName, which drover sets (not the template): "web-": bad name`,
			},
		},
		"a hostname in the template without serviceName is the template's": {
			edit: func(a *tkestackv1.TApp) {
				delete(a.Spec.TemplatePool, "canary")
				a.Spec.Template.Spec.Hostname = "-h"
			},
			respond: func(*corev1.Pod) error {
				return invalidPod(field.Invalid(field.NewPath("spec", "hostname"), "-h", "bad hostname"))
			},
			wantMessages: []string{`spec.template.spec.hostname: Invalid value: "-h": bad hostname`},
		},
		"an Invalid status without causes is reported at the template": {
			edit: func(a *tkestackv1.TApp) { delete(a.Spec.TemplatePool, "canary") },
			respond: func(*corev1.Pod) error {
				return &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: http.StatusUnprocessableEntity,
					Reason: metav1.StatusReasonInvalid, Message: "no good"}}
			},
			wantMessages: []string{"spec.template: Invalid value: no good"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			app := makeTApp()
			if tc.edit != nil {
				tc.edit(app)
			}
			_, err := validateTApp(&testutil.DryRuns[*corev1.Pod]{Respond: tc.respond}, nil, app)
			if !apierrors.IsInvalid(err) {
				t.Fatalf("validate = %v, want a 422 Invalid", err)
			}
			if diff := cmp.Diff(tc.wantMessages, testutil.CauseMessages(err)); diff != "" {
				t.Errorf("cause messages (-want +got):\n%s", diff)
			}
		})
	}
}

func TestTAppDryRunSelection(t *testing.T) {
	badImage := func(pod *corev1.Pod) error {
		if image(pod) == "bad" {
			return invalidPod(field.Invalid(field.NewPath("spec", "containers").Index(0).Child("image"), "bad", "bad image"))
		}
		return nil
	}
	stored := makeTApp(func(a *tkestackv1.TApp) {
		a.Spec.Template.Spec.Containers[0].Image = "bad"
		a.Spec.TemplatePool["canary"] = tappPodTemplate("bad")
	})
	tests := map[string]struct {
		old, app     *tkestackv1.TApp
		wantImages   []string
		wantMessages []string
	}{
		"update leaving the stored bad templates unchanged: nothing sent": {
			old: stored,
			app: editedCopy(stored, func(a *tkestackv1.TApp) { a.Spec.Replicas = 5 }),
		},
		"update of one template: only it is sent and reported": {
			old:          stored,
			app:          editedCopy(stored, func(a *tkestackv1.TApp) { a.Spec.TemplatePool["canary"] = withImage("bad", "sidecar:1") }),
			wantImages:   []string{"bad"},
			wantMessages: []string{`spec.templatePool[canary].spec.containers[0].image: Invalid value: "bad": bad image`},
		},
		"update adding a template: only it is sent": {
			old:        stored,
			app:        editedCopy(stored, func(a *tkestackv1.TApp) { a.Spec.TemplatePool["beta"] = tappPodTemplate("nginx:3") }),
			wantImages: []string{"nginx:3"},
		},
		"create: a spec.template without containers is not sent": {
			app: makeTApp(func(a *tkestackv1.TApp) {
				a.Spec.DefaultTemplateName = "canary"
				a.Spec.Template.Spec.Containers = nil
			}),
			wantImages: []string{"nginx:2"},
		},
		"create: a template with structural errors of its own is not sent": {
			app: makeTApp(func(a *tkestackv1.TApp) {
				a.Spec.TemplatePool[""] = tappPodTemplate("bad")
			}),
			wantImages:   []string{"nginx:1", "nginx:2"},
			wantMessages: []string{"spec.templatePool[]: Invalid value: \"\": template names must not be empty"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			d := &testutil.DryRuns[*corev1.Pod]{Respond: badImage}
			_, err := validateTApp(d, tc.old, tc.app)
			var images []string
			for _, pod := range d.Objs {
				images = append(images, image(pod))
			}
			if diff := cmp.Diff(tc.wantImages, sortedStrings(images)); diff != "" {
				t.Errorf("images sent (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantMessages, testutil.CauseMessages(err)); diff != "" {
				t.Errorf("cause messages (-want +got):\n%s", diff)
			}
		})
	}
}

func TestTAppDryRunFailureAdmitsWithAWarning(t *testing.T) {
	d := &testutil.DryRuns[*corev1.Pod]{Respond: func(*corev1.Pod) error {
		return apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "", nil)
	}}
	warnings, err := validateTApp(d, nil, makeTApp())
	if err != nil {
		t.Fatalf("validate = %v, want allowed", err)
	}
	if len(warnings) != 1 || len(d.Objs) != 1 {
		t.Errorf("warnings %q after %d dry runs; want one warning after one dry run", warnings, len(d.Objs))
	}
}

func TestTAppDryRunServiceNameErrorsAreNotRepeated(t *testing.T) {
	app := makeTApp(func(a *tkestackv1.TApp) {
		delete(a.Spec.TemplatePool, "canary")
		a.Spec.ServiceName = "Web"
	})
	d := &testutil.DryRuns[*corev1.Pod]{}
	_, err := validateTApp(d, nil, app)
	if diff := cmp.Diff([]string{"spec.serviceName"}, testutil.CauseFields(err)); diff != "" {
		t.Errorf("causes (-want +got):\n%s", diff)
	}
	if len(d.Objs) != 1 || d.Objs[0].Spec.Hostname != "" || d.Objs[0].Spec.Subdomain != "" {
		t.Errorf("sent %d pods, want one without hostname and subdomain", len(d.Objs))
	}
}

func TestTAppDryRunOff(t *testing.T) {
	if _, err := (Validator{}).ValidateCreate(context.Background(), makeTApp(func(a *tkestackv1.TApp) {
		a.Spec.Template.Spec.Containers[0].Image = ""
	})); err != nil {
		t.Errorf("validate without a dry-run client = %v, want allowed", err)
	}
}

// editedCopy returns a copy of app changed by f.
func editedCopy(app *tkestackv1.TApp, f func(*tkestackv1.TApp)) *tkestackv1.TApp {
	out := app.DeepCopy()
	f(out)
	return out
}

// withImage is tappPodTemplate(image) with a second container running sidecar.
func withImage(image, sidecar string) corev1.PodTemplateSpec {
	t := tappPodTemplate(image)
	t.Spec.Containers = append(t.Spec.Containers, corev1.Container{Name: "sidecar", Image: sidecar})
	return t
}

func sortedStrings(s []string) []string {
	return slices.Sorted(slices.Values(s))
}
