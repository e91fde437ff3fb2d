package yurtappdaemon

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/drover-dev/drover/internal/testutil"

	"github.com/google/go-cmp/cmp"
	admissionv1 "k8s.io/api/admission/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	openyurtv1alpha1 "github.com/drover-dev/drover/api/openyurt/apps/v1alpha1"
	openyurtv1beta1 "github.com/drover-dev/drover/api/openyurt/apps/v1beta1"
	"github.com/drover-dev/drover/internal/scheme"
)

func TestOwnerValidatorOtherKind(t *testing.T) {
	tests := map[string]struct {
		others       func(k testOwnerKind) []client.Object
		getErr       error
		update       bool
		wantCauses   []string
		wantWarnings int
	}{
		"no namesake of the other kind": {
			others: func(k testOwnerKind) []client.Object { return []client.Object{named(k.other(), "web", testNamespace)} },
		},
		"a namesake of the other kind is rejected": {
			others:     func(k testOwnerKind) []client.Object { return []client.Object{named(k.other(), "dns", testNamespace)} },
			wantCauses: []string{"metadata.name"},
		},
		"a namesake in another namespace is fine": {
			others: func(k testOwnerKind) []client.Object { return []client.Object{named(k.other(), "dns", "cloud")} },
		},
		"not checked on update": {
			others: func(k testOwnerKind) []client.Object { return []client.Object{named(k.other(), "dns", testNamespace)} },
			update: true,
		},
		"the other kind not served: skipped": {
			getErr: &meta.NoKindMatchError{GroupKind: schema.GroupKind{Group: openyurtv1alpha1.GroupVersion.Group, Kind: "X"}},
		},
		"an unreadable cache admits with a warning": {
			getErr:       errors.New("informer not synced"),
			wantWarnings: 1,
		},
	}
	forEachOwnerKind(t, func(t *testing.T, k testOwnerKind) {
		for name, tc := range tests {
			t.Run(name, func(t *testing.T) {
				b := fake.NewClientBuilder().WithScheme(scheme.New())
				if tc.others != nil {
					b = b.WithObjects(tc.others(k)...)
				}
				if tc.getErr != nil {
					b = b.WithInterceptorFuncs(interceptor.Funcs{Get: func(context.Context, client.WithWatch, client.ObjectKey, client.Object, ...client.GetOption) error {
						return tc.getErr
					}})
				}
				obj := k.owner("dns", deploymentSpec())
				var oldObj openyurtv1alpha1.Owner
				if tc.update {
					oldObj = k.owner("dns", deploymentSpec())
				}
				warnings, err := k.validate(context.Background(), b.Build(), nil, oldObj, obj)
				if tc.wantCauses == nil && err != nil {
					t.Fatalf("validate = %v, want allowed", err)
				}
				if tc.wantCauses != nil && !apierrors.IsInvalid(err) {
					t.Fatalf("validate = %v, want a 422 Invalid", err)
				}
				if diff := cmp.Diff(tc.wantCauses, testutil.CauseFields(err)); diff != "" {
					t.Errorf("causes (-want +got):\n%s", diff)
				}
				if len(warnings) != tc.wantWarnings {
					t.Errorf("warnings = %q, want %d", warnings, tc.wantWarnings)
				}
			})
		}
	})
}

func named(obj client.Object, name, namespace string) client.Object {
	obj.SetName(name)
	obj.SetNamespace(namespace)
	return obj
}

// invalidChild is the API server's 422 for a child with the given field errors.
func invalidChild(errs ...*field.Error) error {
	return apierrors.NewInvalid(schema.GroupKind{Group: "apps", Kind: "Deployment"}, "", errs)
}

// imageIs answers Invalid at the first container's image when it is image.
func imageIs(image string) func(*unstructured.Unstructured) error {
	return func(u *unstructured.Unstructured) error {
		containers, _, _ := unstructured.NestedSlice(u.Object, "spec", "template", "spec", "containers")
		if len(containers) > 0 && containers[0].(map[string]any)["image"] == image {
			return invalidChild(field.Invalid(field.NewPath("spec", "template", "spec", "containers").Index(0).Child("image"),
				image, "bad image"))
		}
		return nil
	}
}

func TestOwnerValidatorDryRun(t *testing.T) {
	imagePath := "spec.workloadTemplate.deploymentTemplate.spec.template.spec.containers[0].image"
	imageTweak := func(pools ...string) openyurtv1alpha1.WorkloadTweak {
		return openyurtv1alpha1.WorkloadTweak{Pools: pools, Tweaks: openyurtv1alpha1.Tweaks{
			ContainerImages: []openyurtv1alpha1.ContainerImage{{Name: "dns", TargetImage: "bad:1"}}}}
	}
	tests := map[string]struct {
		spec, oldSpec *openyurtv1alpha1.YurtAppDaemonSpec // oldSpec nil: CREATE
		respond       func(*unstructured.Unstructured) error
		wantCreates   int
		wantCauses    []string // fields
		wantMessages  []string // "<field>: <message>", checked when set
		wantWarnings  int
	}{
		"an accepted template": {spec: deploymentSpec(), wantCreates: 1},
		"Invalid causes are mapped onto the template, messages kept": {
			spec: deploymentSpec(),
			respond: func(*unstructured.Unstructured) error {
				return invalidChild(
					field.Required(field.NewPath("spec", "template", "spec", "containers").Index(0).Child("image"), ""),
					field.Invalid(field.NewPath("metadata", "labels"), "x y", "a valid label must be ..."),
				)
			},
			wantCreates: 1,
			wantCauses:  []string{imagePath, "spec.workloadTemplate.deploymentTemplate.metadata.labels"},
			wantMessages: []string{
				imagePath + ": Required value",
				`spec.workloadTemplate.deploymentTemplate.metadata.labels: Invalid value: "x y": a valid label must be ...`,
			},
		},
		"an Invalid status without causes is reported at the template": {
			spec: deploymentSpec(),
			respond: func(*unstructured.Unstructured) error {
				return &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: http.StatusUnprocessableEntity,
					Reason: metav1.StatusReasonInvalid, Message: "no good"}}
			},
			wantCreates:  1,
			wantCauses:   []string{"spec.workloadTemplate.deploymentTemplate"},
			wantMessages: []string{"spec.workloadTemplate.deploymentTemplate: Invalid value: no good"},
		},
		"a timeout admits with a warning and stops the dry runs": {
			spec: with(deploymentSpec(), func(s *openyurtv1alpha1.YurtAppDaemonSpec) {
				s.WorkloadTweaks = []openyurtv1alpha1.WorkloadTweak{imageTweak("east")}
			}),
			respond:     func(*unstructured.Unstructured) error { return apierrors.NewTimeoutError("request timed out", 1) },
			wantCreates: 1, wantWarnings: 1,
		},
		"an unavailable API server admits with a warning": {
			spec:        deploymentSpec(),
			respond:     func(*unstructured.Unstructured) error { return apierrors.NewServiceUnavailable("try later") },
			wantCreates: 1, wantWarnings: 1,
		},
		"once more per tweak with images or patches": {
			spec: with(deploymentSpec(), func(s *openyurtv1alpha1.YurtAppDaemonSpec) {
				s.WorkloadTweaks = []openyurtv1alpha1.WorkloadTweak{
					{Pools: []string{"east"}, Tweaks: openyurtv1alpha1.Tweaks{Replicas: ptr.To[int32](3)}},
					{Pools: []string{"east"}, Tweaks: openyurtv1alpha1.Tweaks{
						ContainerImages: []openyurtv1alpha1.ContainerImage{{Name: "dns", TargetImage: "coredns:1.12"}}}},
					{NodePoolSelector: &metav1.LabelSelector{}, Tweaks: openyurtv1alpha1.Tweaks{Patches: []openyurtv1alpha1.Patch{{
						Path: "/spec/minReadySeconds", Operation: openyurtv1alpha1.PatchAdd, Value: &runtime.RawExtension{Raw: []byte("5")}}}}},
				}
			}),
			wantCreates: 3,
		},
		"an error only a tweak causes names the tweak": {
			spec: with(deploymentSpec(), func(s *openyurtv1alpha1.YurtAppDaemonSpec) {
				s.WorkloadTweaks = []openyurtv1alpha1.WorkloadTweak{imageTweak("west")}
			}),
			respond:      imageIs("bad:1"),
			wantCreates:  2,
			wantCauses:   []string{imagePath},
			wantMessages: []string{imagePath + `: Invalid value: "bad:1": bad image (with spec.workloadTweaks[0] applied)`},
		},
		"an error of the template is reported once, not again per tweak": {
			spec: with(deploymentSpec(), func(s *openyurtv1alpha1.YurtAppDaemonSpec) {
				deployPod(s).Spec.Containers[0].Image = "bad:1"
				s.WorkloadTweaks = []openyurtv1alpha1.WorkloadTweak{{Pools: []string{"east"}, Tweaks: openyurtv1alpha1.Tweaks{
					ContainerImages: []openyurtv1alpha1.ContainerImage{{Name: "init", TargetImage: "busybox:2"}}}}}
			}),
			respond:      imageIs("bad:1"),
			wantCreates:  2,
			wantCauses:   []string{imagePath},
			wantMessages: []string{imagePath + `: Invalid value: "bad:1": bad image`},
		},
		"structural errors of the template skip the dry run": {
			spec:        with(deploymentSpec(), func(s *openyurtv1alpha1.YurtAppDaemonSpec) { deployPod(s).Labels = map[string]string{"app": "web"} }),
			wantCauses:  []string{"spec.workloadTemplate.deploymentTemplate.spec.template.metadata.labels"},
			wantCreates: 0,
		},
		"other structural errors accumulate with the dry run's": {
			spec: with(deploymentSpec(), func(s *openyurtv1alpha1.YurtAppDaemonSpec) {
				deployPod(s).Spec.NodeSelector = map[string]string{openyurtv1beta1.LabelCurrentNodePool: "east"}
				deployPod(s).Spec.Containers[0].Image = "bad:1"
			}),
			respond:     imageIs("bad:1"),
			wantCreates: 1,
			wantCauses:  []string{"spec.workloadTemplate.deploymentTemplate.spec.template.spec.nodeSelector", imagePath},
		},
		"a tweak with errors of its own is not sent": {
			spec: with(deploymentSpec(), func(s *openyurtv1alpha1.YurtAppDaemonSpec) {
				s.WorkloadTweaks = []openyurtv1alpha1.WorkloadTweak{{Pools: []string{"east"}, Tweaks: openyurtv1alpha1.Tweaks{
					ContainerImages: []openyurtv1alpha1.ContainerImage{{Name: "sidecar", TargetImage: "x:1"}}}}}
			}),
			wantCreates: 1,
			wantCauses:  []string{"spec.workloadTweaks[0].tweaks.containerImages[0].name"},
		},
		"update without template or tweak changes: no dry run": {
			spec: with(deploymentSpec(), func(s *openyurtv1alpha1.YurtAppDaemonSpec) {
				s.NodePoolSelector = &metav1.LabelSelector{}
				s.RevisionHistoryLimit = ptr.To[int32](2)
			}),
			oldSpec: deploymentSpec(),
			respond: imageIs("coredns:1.11"),
		},
		"update of the template: dry run": {
			spec:         with(deploymentSpec(), func(s *openyurtv1alpha1.YurtAppDaemonSpec) { deployPod(s).Spec.Containers[0].Image = "bad:1" }),
			oldSpec:      deploymentSpec(),
			respond:      imageIs("bad:1"),
			wantCreates:  1,
			wantCauses:   []string{imagePath},
			wantMessages: []string{imagePath + `: Invalid value: "bad:1": bad image`},
		},
		"update of a tweak only: the stored template's errors are ratcheted, the tweak's are not": {
			spec: with(deploymentSpec(), func(s *openyurtv1alpha1.YurtAppDaemonSpec) {
				deployPod(s).Spec.Containers[0].Image = "old:1"
				s.WorkloadTweaks = []openyurtv1alpha1.WorkloadTweak{
					{Pools: []string{"east"}, Tweaks: openyurtv1alpha1.Tweaks{
						ContainerImages: []openyurtv1alpha1.ContainerImage{{Name: "init", TargetImage: "bad:1"}}}},
					imageTweak("west"),
				}
			}),
			oldSpec: with(deploymentSpec(), func(s *openyurtv1alpha1.YurtAppDaemonSpec) {
				deployPod(s).Spec.Containers[0].Image = "old:1"
				s.WorkloadTweaks = []openyurtv1alpha1.WorkloadTweak{{Pools: []string{"east"}, Tweaks: openyurtv1alpha1.Tweaks{
					ContainerImages: []openyurtv1alpha1.ContainerImage{{Name: "init", TargetImage: "bad:1"}}}}}
			}),
			respond: func(u *unstructured.Unstructured) error {
				if err := imageIs("old:1")(u); err != nil {
					return err
				}
				return imageIs("bad:1")(u)
			},
			wantCreates:  2, // the template (for its known errors) and the new tweak; the unchanged tweak is not sent
			wantCauses:   []string{imagePath},
			wantMessages: []string{imagePath + `: Invalid value: "bad:1": bad image (with spec.workloadTweaks[1] applied)`},
		},
	}
	forEachOwnerKind(t, func(t *testing.T, k testOwnerKind) {
		for name, tc := range tests {
			t.Run(name, func(t *testing.T) {
				d := &testutil.DryRuns[*unstructured.Unstructured]{Respond: tc.respond}
				var oldObj openyurtv1alpha1.Owner
				if tc.oldSpec != nil {
					oldObj = k.owner("dns", tc.oldSpec)
				}
				warnings, err := k.validate(context.Background(), nil, d.Client(), oldObj, k.owner("dns", tc.spec))
				if len(d.Objs) != tc.wantCreates {
					t.Errorf("%d dry-run creates, want %d", len(d.Objs), tc.wantCreates)
				}
				if tc.wantCauses == nil && err != nil {
					t.Fatalf("validate = %v, want allowed", err)
				}
				if tc.wantCauses != nil && !apierrors.IsInvalid(err) {
					t.Fatalf("validate = %v, want a 422 Invalid", err)
				}
				if diff := cmp.Diff(tc.wantCauses, testutil.CauseFields(err)); diff != "" {
					t.Errorf("causes (-want +got):\n%s", diff)
				}
				if tc.wantMessages != nil {
					if diff := cmp.Diff(tc.wantMessages, testutil.CauseMessages(err)); diff != "" {
						t.Errorf("cause messages (-want +got):\n%s", diff)
					}
				}
				if len(warnings) != tc.wantWarnings {
					t.Errorf("warnings = %q, want %d", warnings, tc.wantWarnings)
				}
				for i, obj := range d.Objs {
					checkDryRunChild(t, obj, d.Opts[i])
				}
			})
		}
	})
}

// checkDryRunChild checks what the dry run sends: a dry-run create of a Deployment for the placeholder pool with
// generateName, in the owner's namespace, without ownerReferences.
func checkDryRunChild(t *testing.T, obj *unstructured.Unstructured, opts []client.CreateOption) {
	t.Helper()
	co := &client.CreateOptions{}
	co.ApplyOptions(opts)
	if diff := cmp.Diff([]string{metav1.DryRunAll}, co.DryRun); diff != "" {
		t.Errorf("dryRun (-want +got):\n%s", diff)
	}
	got := []string{obj.GetAPIVersion(), obj.GetKind(), obj.GetName(), obj.GetGenerateName(), obj.GetNamespace(),
		obj.GetLabels()[openyurtv1alpha1.LabelPoolName]}
	want := []string{"apps/v1", "Deployment", "", "dns-" + dryRunPool + "-", testNamespace, dryRunPool}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("child (-want +got):\n%s", diff)
	}
	if refs := obj.GetOwnerReferences(); len(refs) > 0 {
		t.Errorf("ownerReferences = %v, want none", refs)
	}
}

func TestOwnerValidatorDryRunAppliesOneTweakPerRun(t *testing.T) {
	spec := twoImageTweaks()
	forEachOwnerKind(t, func(t *testing.T, k testOwnerKind) {
		d := &testutil.DryRuns[*unstructured.Unstructured]{}
		owner := k.owner("dns", spec)
		before := owner.DeepCopyObject()
		if _, err := k.validate(context.Background(), nil, d.Client(), nil, owner); err != nil {
			t.Fatalf("validate: %v", err)
		}
		if diff := cmp.Diff(before, owner.DeepCopyObject()); diff != "" {
			t.Errorf("validation changed the admitted object (-before +after):\n%s", diff)
		}
		var images []string
		for _, obj := range d.Objs {
			containers, _, _ := unstructured.NestedSlice(obj.Object, "spec", "template", "spec", "containers")
			images = append(images, containers[0].(map[string]any)["image"].(string))
		}
		slices.Sort(images) // the runs go concurrently
		if diff := cmp.Diff([]string{"a:1", "b:1", "coredns:1.11"}, images); diff != "" {
			t.Errorf("images sent (-want +got):\n%s", diff)
		}
	})
}

func TestOwnerValidatorStatefulSetDryRun(t *testing.T) {
	forEachOwnerKind(t, func(t *testing.T, k testOwnerKind) {
		d := &testutil.DryRuns[*unstructured.Unstructured]{Respond: func(*unstructured.Unstructured) error {
			return apierrors.NewInvalid(schema.GroupKind{Group: "apps", Kind: "StatefulSet"}, "",
				field.ErrorList{field.Required(field.NewPath("spec", "serviceName"), "")})
		}}
		_, err := k.validate(context.Background(), nil, d.Client(), nil, k.owner("db", statefulSetSpec()))
		if diff := cmp.Diff([]string{"spec.workloadTemplate.statefulSetTemplate.spec.serviceName: Required value"}, testutil.CauseMessages(err)); diff != "" {
			t.Errorf("causes (-want +got):\n%s", diff)
		}
		if len(d.Objs) != 1 || d.Objs[0].GetKind() != "StatefulSet" || d.Objs[0].GetGenerateName() != "db-"+dryRunPool+"-" {
			t.Errorf("sent %v, want one StatefulSet with generateName", d.Objs)
		}
	})
}

// rawOwner returns the JSON of obj with edit applied to its generic form.
func rawOwner(t *testing.T, obj openyurtv1alpha1.Owner, gvk schema.GroupVersionKind, edit func(u map[string]any)) []byte {
	t.Helper()
	obj.GetObjectKind().SetGroupVersionKind(gvk)
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		t.Fatal(err)
	}
	if edit != nil {
		edit(u)
	}
	raw, err := json.Marshal(u)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

func setField(u map[string]any, value any, path ...string) {
	if err := unstructured.SetNestedField(u, value, path...); err != nil {
		panic(err)
	}
}

func TestTemplateWarnings(t *testing.T) {
	tmpl := []string{"spec", "workloadTemplate", "deploymentTemplate"}
	at := func(path ...string) []string { return append(append([]string{}, tmpl...), path...) }
	tests := map[string]struct {
		edit func(u map[string]any)
		want []string
	}{
		"a clean template": {},
		"unknown fields of the spec and the metadata": {
			edit: func(u map[string]any) {
				setField(u, []any{map[string]any{"name": "dns", "image": "coredns:1.11", "imagePullPolcy": "Always"}},
					at("spec", "template", "spec", "containers")...)
				setField(u, int64(3), at("spec", "replica")...)
				setField(u, "x", at("metadata", "label")...)
			},
			want: []string{
				`spec.workloadTemplate.deploymentTemplate.metadata.label: unknown field, ignored`,
				`spec.workloadTemplate.deploymentTemplate.metadata.label is ignored: only the labels and annotations of the template metadata are used`,
				`spec.workloadTemplate.deploymentTemplate.spec.replica: unknown field, ignored`,
				`spec.workloadTemplate.deploymentTemplate.spec.template.spec.containers[0].imagePullPolcy: unknown field, ignored`,
			},
		},
		"ignored metadata": {
			edit: func(u map[string]any) {
				setField(u, "n", at("metadata", "name")...)
				setField(u, "ns", at("metadata", "namespace")...)
				setField(u, []any{"f"}, at("metadata", "finalizers")...)
				setField(u, []any{map[string]any{"apiVersion": "v1", "kind": "X", "name": "x", "uid": "1"}}, at("metadata", "ownerReferences")...)
				setField(u, map[string]any{}, at("metadata", "annotations")...)
			},
			want: []string{
				"spec.workloadTemplate.deploymentTemplate.metadata.finalizers is ignored: only the labels and annotations of the template metadata are used",
				"spec.workloadTemplate.deploymentTemplate.metadata.name is ignored: only the labels and annotations of the template metadata are used",
				"spec.workloadTemplate.deploymentTemplate.metadata.namespace is ignored: only the labels and annotations of the template metadata are used",
				"spec.workloadTemplate.deploymentTemplate.metadata.ownerReferences is ignored: only the labels and annotations of the template metadata are used",
			},
		},
	}
	forEachOwnerKind(t, func(t *testing.T, k testOwnerKind) {
		for name, tc := range tests {
			t.Run(name, func(t *testing.T) {
				raw := rawOwner(t, k.owner("dns", deploymentSpec()), k.gvk, tc.edit)
				if diff := cmp.Diff(tc.want, []string(TemplateWarnings(raw))); diff != "" {
					t.Errorf("warnings (-want +got):\n%s", diff)
				}
				// The validator returns them on CREATE, and on UPDATE only when the template changed.
				ctx := requestContext(admissionv1.Create, raw)
				obj := k.owner("dns", deploymentSpec())
				warnings, err := k.validate(ctx, nil, nil, nil, obj)
				if err != nil {
					t.Fatalf("ValidateCreate: %v", err)
				}
				if diff := cmp.Diff(tc.want, []string(warnings)); diff != "" {
					t.Errorf("create warnings (-want +got):\n%s", diff)
				}
				warnings, _ = k.validate(ctx, nil, nil, k.owner("dns", deploymentSpec()), obj)
				if len(warnings) != 0 {
					t.Errorf("update warnings for an unchanged template = %q, want none", warnings)
				}
			})
		}
	})
}

func TestTemplateWarningsStatefulSet(t *testing.T) {
	forEachOwnerKind(t, func(t *testing.T, k testOwnerKind) {
		raw := rawOwner(t, k.owner("db", statefulSetSpec()), k.gvk, func(u map[string]any) {
			setField(u, "x", "spec", "workloadTemplate", "statefulSetTemplate", "spec", "serviceNam")
		})
		want := []string{"spec.workloadTemplate.statefulSetTemplate.spec.serviceNam: unknown field, ignored"}
		if diff := cmp.Diff(want, []string(TemplateWarnings(raw))); diff != "" {
			t.Errorf("warnings (-want +got):\n%s", diff)
		}
	})
}

// TestOwnerWebhookHandlers drives the generic handlers as the webhook server does, for both kinds.
func TestOwnerWebhookHandlers(t *testing.T) {
	forEachOwnerKind(t, func(t *testing.T, k testOwnerKind) {
		mutating, validating := k.handlers()
		ctx := context.Background()
		request := func(op admissionv1.Operation, raw []byte) admission.Request {
			return admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
				UID: "1", Operation: op, Namespace: testNamespace, Name: "dns",
				Kind:   metav1.GroupVersionKind{Group: k.gvk.Group, Version: k.gvk.Version, Kind: k.gvk.Kind},
				Object: runtime.RawExtension{Raw: raw}, OldObject: runtime.RawExtension{Raw: raw},
			}}
		}
		undefaulted := with(deploymentSpec(), func(s *openyurtv1alpha1.YurtAppDaemonSpec) {
			s.RevisionHistoryLimit = nil
			s.WorkloadTemplate.DeploymentTemplate.Spec.Selector = nil
		})
		raw := rawOwner(t, k.owner("dns", undefaulted), k.gvk, func(u map[string]any) {
			setField(u, "x", "spec", "workloadTemplate", "deploymentTemplate", "spec", "futureField")
		})

		t.Run("defaulting patches limit and template selector and keeps unknown fields", func(t *testing.T) {
			resp := mutating.Handle(ctx, request(admissionv1.Create, raw))
			if !resp.Allowed {
				t.Fatalf("denied: %v", resp.Result)
			}
			var paths []string
			for _, p := range resp.Patches {
				paths = append(paths, p.Path)
			}
			for _, want := range []string{"/spec/revisionHistoryLimit", "/spec/workloadTemplate/deploymentTemplate/spec/selector"} {
				if !slices.Contains(paths, want) {
					t.Errorf("patches %q lack %q", paths, want)
				}
			}
			for _, p := range paths {
				if strings.Contains(p, "futureField") {
					t.Errorf("patch %q touches the unknown field", p)
				}
			}
		})
		t.Run("validation warns about unknown fields", func(t *testing.T) {
			resp := validating.Handle(ctx, request(admissionv1.Create, raw))
			if !resp.Allowed {
				t.Fatalf("denied: %v", resp.Result)
			}
			want := []string{"spec.workloadTemplate.deploymentTemplate.spec.futureField: unknown field, ignored"}
			if diff := cmp.Diff(want, resp.Warnings); diff != "" {
				t.Errorf("warnings (-want +got):\n%s", diff)
			}
		})
		t.Run("an invalid owner gets a 422 with field paths", func(t *testing.T) {
			bad := rawOwner(t, k.owner("dns", with(deploymentSpec(), func(s *openyurtv1alpha1.YurtAppDaemonSpec) { s.NodePoolSelector = nil })), k.gvk, nil)
			resp := validating.Handle(ctx, request(admissionv1.Create, bad))
			if resp.Allowed || resp.Result.Code != http.StatusUnprocessableEntity {
				t.Fatalf("response = %v, want a 422 denial", resp.Result)
			}
			if got := resp.Result.Details.Causes; len(got) != 1 || got[0].Field != "spec.nodepoolSelector" {
				t.Errorf("causes = %v, want one at spec.nodepoolSelector", got)
			}
		})
		t.Run("an undecodable request is left to the API server by defaulting and denied with a 422 by validation", func(t *testing.T) {
			bad := rawOwner(t, k.owner("dns", deploymentSpec()), k.gvk, func(u map[string]any) {
				setField(u, 1.5, "spec", "revisionHistoryLimit")
				podSpec := []string{"spec", "workloadTemplate", "deploymentTemplate", "spec", "template", "spec"}
				containers, _, _ := unstructured.NestedSlice(u, append(podSpec, "containers")...)
				containers[0].(map[string]any)["resources"] = map[string]any{"requests": map[string]any{"cpu": "abc"}}
				setField(u, containers, append(podSpec, "containers")...)
			})
			if resp := mutating.Handle(ctx, request(admissionv1.Create, bad)); !resp.Allowed || len(resp.Patches) > 0 {
				t.Errorf("mutating: response = %v with %d patches, want allowed unchanged", resp.Result, len(resp.Patches))
			}
			fields := testutil.DeniedFields(t, validating.Handle(ctx, request(admissionv1.Create, bad)))
			want := []string{"spec.workloadTemplate.deploymentTemplate.spec.template.spec.containers[0].resources.requests[cpu]",
				"spec.revisionHistoryLimit"}
			if diff := cmp.Diff(want, fields); diff != "" {
				t.Errorf("causes (-want +got):\n%s", diff)
			}
		})
		t.Run("a junk status is ignored", func(t *testing.T) {
			withStatus := rawOwner(t, k.owner("dns", deploymentSpec()), k.gvk, func(u map[string]any) { u["status"] = "x" })
			for name, h := range map[string]admission.Handler{"mutating": mutating, "validating": validating} {
				resp := h.Handle(ctx, request(admissionv1.Create, withStatus))
				if !resp.Allowed {
					t.Errorf("%s: denied: %v", name, resp.Result)
				}
				for _, p := range resp.Patches {
					if strings.HasPrefix(p.Path, "/status") {
						t.Errorf("%s: patch %s %s touches the status", name, p.Operation, p.Path)
					}
				}
			}
		})
		t.Run("delete is allowed", func(t *testing.T) {
			bad := rawOwner(t, k.owner("dns", &openyurtv1alpha1.YurtAppDaemonSpec{}), k.gvk, nil)
			if resp := validating.Handle(ctx, request(admissionv1.Delete, bad)); !resp.Allowed {
				t.Errorf("delete denied: %v", resp.Result)
			}
		})
	})
}

// twoImageTweaks is a Deployment spec with two tweaks setting images: a:1 for pool east, b:1 for pool west.
func twoImageTweaks() *openyurtv1alpha1.YurtAppDaemonSpec {
	return with(deploymentSpec(), func(s *openyurtv1alpha1.YurtAppDaemonSpec) {
		s.WorkloadTweaks = []openyurtv1alpha1.WorkloadTweak{
			{Pools: []string{"east"}, Tweaks: openyurtv1alpha1.Tweaks{ContainerImages: []openyurtv1alpha1.ContainerImage{{Name: "dns", TargetImage: "a:1"}}}},
			{Pools: []string{"west"}, Tweaks: openyurtv1alpha1.Tweaks{ContainerImages: []openyurtv1alpha1.ContainerImage{{Name: "dns", TargetImage: "b:1"}}}},
		}
	})
}
