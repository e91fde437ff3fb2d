package tapp

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/drover-dev/drover/internal/testutil"
	"github.com/drover-dev/drover/internal/webhook"

	"github.com/google/go-cmp/cmp"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	tkestackv1 "github.com/drover-dev/drover/api/tkestack/apps/v1"
	"github.com/drover-dev/drover/internal/scheme"
)

func TestDefaultTApp(t *testing.T) {
	undefaulted := func(edits ...func(*tkestackv1.TApp)) *tkestackv1.TApp {
		app := makeTApp(func(a *tkestackv1.TApp) {
			a.Labels = nil
			a.Spec.Selector = nil
			a.Spec.DefaultTemplateName = ""
			a.Spec.UpdateStrategy = tkestackv1.UpdateStrategy{}
		})
		for _, e := range edits {
			e(app)
		}
		return app
	}
	tests := map[string]struct {
		in, old *tkestackv1.TApp
		want    *tkestackv1.TApp
	}{
		"create: every default": {
			in:   undefaulted(),
			want: makeTApp(),
		},
		"create: selector and labels leave out drover's pod labels": {
			in: undefaulted(func(a *tkestackv1.TApp) {
				a.Spec.Template.Labels = map[string]string{"app": "web", tkestackv1.TAppInstanceKey: "1",
					tkestackv1.TAppHashKey: "h", tkestackv1.TAppUniqHashKey: "u"}
			}),
			want: makeTApp(func(a *tkestackv1.TApp) {
				a.Spec.Template.Labels = map[string]string{"app": "web", tkestackv1.TAppInstanceKey: "1",
					tkestackv1.TAppHashKey: "h", tkestackv1.TAppUniqHashKey: "u"}
			}),
		},
		"create: a template without labels gives no selector and no labels": {
			in: undefaulted(func(a *tkestackv1.TApp) { a.Spec.Template.Labels = map[string]string{tkestackv1.TAppInstanceKey: "1"} }),
			want: makeTApp(func(a *tkestackv1.TApp) {
				a.Labels = nil
				a.Spec.Selector = nil
				a.Spec.Template.Labels = map[string]string{tkestackv1.TAppInstanceKey: "1"}
			}),
		},
		"set values are kept": {
			in: undefaulted(func(a *tkestackv1.TApp) {
				a.Labels = map[string]string{"team": "a"}
				a.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}, MatchExpressions: []metav1.LabelSelectorRequirement{}}
				a.Spec.DefaultTemplateName = "canary"
				a.Spec.UpdateStrategy.MaxUnavailable = new(intstr.FromString("50%"))
				a.Spec.UpdateStrategy.ForceUpdate.MaxUnavailable = new(intstr.FromInt32(2))
			}),
			want: makeTApp(func(a *tkestackv1.TApp) {
				a.Labels = map[string]string{"team": "a"}
				a.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}, MatchExpressions: []metav1.LabelSelectorRequirement{}}
				a.Spec.DefaultTemplateName = "canary"
				a.Spec.UpdateStrategy.MaxUnavailable = new(intstr.FromString("50%"))
				a.Spec.UpdateStrategy.ForceUpdate.MaxUnavailable = new(intstr.FromInt32(2))
			}),
		},
		"the capitalised DefaultTemplateName is moved over defaultTemplateName": {
			in: undefaulted(func(a *tkestackv1.TApp) {
				a.Spec.DefaultTemplateName = "default"
				a.Spec.DefaultTemplateNameCompat = "canary"
			}),
			want: makeTApp(func(a *tkestackv1.TApp) { a.Spec.DefaultTemplateName = "canary" }),
		},
		"updateStrategy.template is never written": {
			in:   undefaulted(func(a *tkestackv1.TApp) { a.Spec.DefaultTemplateName = "canary" }),
			want: makeTApp(func(a *tkestackv1.TApp) { a.Spec.DefaultTemplateName = "canary" }),
		},
		"update: a missing selector is the stored one": {
			in: undefaulted(),
			old: makeTApp(func(a *tkestackv1.TApp) {
				a.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web", "v": "1"}}
			}),
			want: makeTApp(func(a *tkestackv1.TApp) {
				a.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web", "v": "1"}}
			}),
		},
		"update: without a stored selector it is derived from the template": {
			in:   undefaulted(),
			old:  makeTApp(func(a *tkestackv1.TApp) { a.Spec.Selector = nil }),
			want: makeTApp(),
		},
		"retention policy: absent stays absent": {
			in:   undefaulted(func(a *tkestackv1.TApp) { a.Spec.PersistentVolumeClaimRetentionPolicy = nil }),
			want: makeTApp(),
		},
		"retention policy: missing members are filled in": {
			in: undefaulted(func(a *tkestackv1.TApp) {
				a.Spec.PersistentVolumeClaimRetentionPolicy = &tkestackv1.PersistentVolumeClaimRetentionPolicy{}
			}),
			want: makeTApp(func(a *tkestackv1.TApp) {
				a.Spec.PersistentVolumeClaimRetentionPolicy = &tkestackv1.PersistentVolumeClaimRetentionPolicy{
					WhenDeleted: tkestackv1.DeletePersistentVolumeClaimRetentionPolicyType,
					WhenScaled:  tkestackv1.RetainPersistentVolumeClaimRetentionPolicyType}
			}),
		},
		"retention policy: set members are kept": {
			in: undefaulted(func(a *tkestackv1.TApp) {
				a.Spec.PersistentVolumeClaimRetentionPolicy = &tkestackv1.PersistentVolumeClaimRetentionPolicy{
					WhenScaled: tkestackv1.DeletePersistentVolumeClaimRetentionPolicyType}
			}),
			want: makeTApp(func(a *tkestackv1.TApp) {
				a.Spec.PersistentVolumeClaimRetentionPolicy = &tkestackv1.PersistentVolumeClaimRetentionPolicy{
					WhenDeleted: tkestackv1.DeletePersistentVolumeClaimRetentionPolicyType,
					WhenScaled:  tkestackv1.DeletePersistentVolumeClaimRetentionPolicyType}
			}),
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			templates := tc.in.Spec.Template.DeepCopy()
			pool := make(map[string]corev1.PodTemplateSpec, len(tc.in.Spec.TemplatePool))
			for k, v := range tc.in.Spec.TemplatePool {
				pool[k] = *v.DeepCopy()
			}
			DefaultTApp(tc.in, tc.old)
			if diff := cmp.Diff(tc.want, tc.in); diff != "" {
				t.Errorf("defaulted TApp (-want +got):\n%s", diff)
			}
			if !equality.Semantic.DeepEqual(*templates, tc.in.Spec.Template) || !equality.Semantic.DeepEqual(pool, tc.in.Spec.TemplatePool) {
				t.Errorf("defaulting changed a template")
			}
		})
	}
}

// tappRequest returns an admission request for a TApp; oldRaw is sent on UPDATE.
func tappRequest(op admissionv1.Operation, raw, oldRaw []byte) admission.Request {
	return admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
		UID: "1", Operation: op, Namespace: "ns", Name: "example-tapp",
		Kind:      metav1.GroupVersionKind{Group: "apps.tkestack.io", Version: "v1", Kind: "TApp"},
		Object:    runtime.RawExtension{Raw: raw},
		OldObject: runtime.RawExtension{Raw: oldRaw},
	}}
}

// tappHandlers returns the mutating and validating handlers as SetupTAppWebhook registers them.
func tappHandlers() (mutating, validating admission.Handler) {
	w, err := webhook.NewKindWebhooks(scheme.New(), func() *tkestackv1.TApp { return &tkestackv1.TApp{} }, Defaulter{}, Validator{})
	if err != nil {
		panic(err)
	}
	return w.Mutating, w.Validating
}

func TestTAppMutatingHandler(t *testing.T) {
	mutating, _ := tappHandlers()
	ctx := context.Background()
	raw := []byte(`{"apiVersion":"apps.tkestack.io/v1","kind":"TApp","metadata":{"name":"example-tapp"},
		"spec":{"replicas":3,"DefaultTemplateName":"test",
		"template":{"metadata":{"labels":{"app":"web"}},"spec":{"containers":[{"name":"c","image":"i","futureField":1}]}},
		"templatePool":{"test":{"metadata":{"labels":{"app":"web"}},"spec":{"containers":[{"name":"c","image":"j"}]}}},
		"updateStrategy":{"template":"test"}}}`)

	t.Run("create patches only the defaulted fields", func(t *testing.T) {
		resp := mutating.Handle(ctx, tappRequest(admissionv1.Create, raw, nil))
		if !resp.Allowed {
			t.Fatalf("denied: %v", resp.Result)
		}
		want := []string{
			"add /metadata/labels", "add /spec/defaultTemplateName", "add /spec/selector",
			"add /spec/updateStrategy/forceUpdate", "add /spec/updateStrategy/maxUnavailable",
			"remove /spec/DefaultTemplateName",
		}
		if diff := cmp.Diff(want, testutil.PatchPaths(resp)); diff != "" {
			t.Errorf("patches (-want +got):\n%s", diff)
		}
		var got map[string]any
		if err := json.Unmarshal(testutil.ApplyPatches(t, raw, resp), &got); err != nil {
			t.Fatal(err)
		}
		var orig map[string]any
		_ = json.Unmarshal(raw, &orig)
		spec, origSpec := got["spec"].(map[string]any), orig["spec"].(map[string]any)
		for _, f := range []string{"template", "templatePool"} {
			if diff := cmp.Diff(origSpec[f], spec[f]); diff != "" {
				t.Errorf("spec.%s changed (-want +got):\n%s", f, diff)
			}
		}
		wantStrategy := map[string]any{"template": "test", "maxUnavailable": float64(1),
			"forceUpdate": map[string]any{"maxUnavailable": "100%"}}
		if diff := cmp.Diff(wantStrategy, spec["updateStrategy"]); diff != "" {
			t.Errorf("updateStrategy (-want +got):\n%s", diff)
		}
		if spec["defaultTemplateName"] != "test" {
			t.Errorf("defaultTemplateName = %v, want test", spec["defaultTemplateName"])
		}
	})
	t.Run("update takes the stored selector", func(t *testing.T) {
		oldRaw := []byte(`{"apiVersion":"apps.tkestack.io/v1","kind":"TApp","metadata":{"name":"example-tapp"},
			"spec":{"selector":{"matchLabels":{"app":"web","v":"1"}}}}`)
		resp := mutating.Handle(ctx, tappRequest(admissionv1.Update, raw, oldRaw))
		app := &tkestackv1.TApp{}
		if err := json.Unmarshal(testutil.ApplyPatches(t, raw, resp), app); err != nil {
			t.Fatal(err)
		}
		if want := map[string]string{"app": "web", "v": "1"}; !equality.Semantic.DeepEqual(app.Spec.Selector.MatchLabels, want) {
			t.Errorf("selector = %v, want %v", app.Spec.Selector, want)
		}
	})
	t.Run("a defaulted object gets no patch", func(t *testing.T) {
		defaulted := testutil.ApplyPatches(t, raw, mutating.Handle(ctx, tappRequest(admissionv1.Create, raw, nil)))
		resp := mutating.Handle(ctx, tappRequest(admissionv1.Create, defaulted, nil))
		if !resp.Allowed || len(resp.Patches) != 0 {
			t.Errorf("response = %v, patches %v; want allowed without patches", resp.Result, testutil.PatchPaths(resp))
		}
	})
	t.Run("null parents are replaced", func(t *testing.T) {
		nullRaw := []byte(`{"apiVersion":"apps.tkestack.io/v1","kind":"TApp","metadata":{"name":"x","labels":{"a":"b"}},
			"spec":{"selector":{"matchLabels":{"a":"b"}},"updateStrategy":null,"defaultTemplateName":"default"}}`)
		resp := mutating.Handle(ctx, tappRequest(admissionv1.Create, nullRaw, nil))
		app := &tkestackv1.TApp{}
		if err := json.Unmarshal(testutil.ApplyPatches(t, nullRaw, resp), app); err != nil {
			t.Fatal(err)
		}
		if app.Spec.UpdateStrategy.MaxUnavailable == nil || app.Spec.UpdateStrategy.ForceUpdate.MaxUnavailable == nil {
			t.Errorf("updateStrategy = %+v, want both budgets", app.Spec.UpdateStrategy)
		}
	})
	t.Run("an undecodable TApp is allowed unchanged, for the API server's schema check", func(t *testing.T) {
		bad := []byte(`{"apiVersion":"apps.tkestack.io/v1","kind":"TApp","metadata":{"name":"x"},"spec":{"replicas":1.5}}`)
		resp := mutating.Handle(ctx, tappRequest(admissionv1.Create, bad, nil))
		if !resp.Allowed || len(resp.Patches) != 0 {
			t.Errorf("response = %v with patches %v, want allowed unchanged", resp.Result, resp.Patches)
		}
	})
	t.Run("a junk status on create is ignored", func(t *testing.T) {
		var doc map[string]any
		if err := json.Unmarshal(raw, &doc); err != nil {
			t.Fatal(err)
		}
		doc["status"] = "x"
		withStatus, err := json.Marshal(doc)
		if err != nil {
			t.Fatal(err)
		}
		resp := mutating.Handle(ctx, tappRequest(admissionv1.Create, withStatus, nil))
		if !resp.Allowed || len(resp.Patches) == 0 {
			t.Fatalf("response = %v with patches %v, want allowed with the defaults", resp.Result, resp.Patches)
		}
		for _, p := range resp.Patches {
			if strings.HasPrefix(p.Path, "/status") {
				t.Errorf("patch %s %s touches the status", p.Operation, p.Path)
			}
		}
	})
	t.Run("delete is allowed untouched", func(t *testing.T) {
		resp := mutating.Handle(ctx, tappRequest(admissionv1.Delete, nil, raw))
		if !resp.Allowed || len(resp.Patches) != 0 {
			t.Errorf("response = %v, want allowed", resp.Result)
		}
	})
}

func TestTAppValidatingHandler(t *testing.T) {
	_, validating := tappHandlers()
	ctx := context.Background()
	encode := func(app *tkestackv1.TApp) []byte {
		app.APIVersion, app.Kind = "apps.tkestack.io/v1", "TApp"
		raw, err := json.Marshal(app)
		if err != nil {
			t.Fatal(err)
		}
		return raw
	}
	t.Run("an invalid TApp gets a 422 with every field path", func(t *testing.T) {
		bad := encode(makeTApp(func(a *tkestackv1.TApp) {
			a.Spec.Templates = map[string]string{"3": "missing"}
			a.Spec.UpdateStrategy.ForceUpdate.MaxUnavailable = new(intstr.FromString("5"))
		}))
		resp := validating.Handle(ctx, tappRequest(admissionv1.Create, bad, nil))
		fields := testutil.DeniedFields(t, resp)
		if diff := cmp.Diff([]string{"spec.templates[3]", "spec.updateStrategy.forceUpdate.maxUnavailable"}, fields); diff != "" {
			t.Errorf("causes (-want +got):\n%s", diff)
		}
	})
	t.Run("warnings reach the response", func(t *testing.T) {
		raw := encode(makeTApp(func(a *tkestackv1.TApp) { a.Spec.TemplatePool["default"] = tappPodTemplate("x") }))
		resp := validating.Handle(ctx, tappRequest(admissionv1.Create, raw, nil))
		if !resp.Allowed || len(resp.Warnings) != 1 || !strings.Contains(resp.Warnings[0], "spec.templatePool[default]") {
			t.Errorf("response = %v, warnings %q; want allowed with one warning", resp.Result, resp.Warnings)
		}
	})
	t.Run("update ratchets", func(t *testing.T) {
		stored := encode(makeTApp(func(a *tkestackv1.TApp) { a.Spec.Statuses = map[string]tkestackv1.InstanceStatus{"1": "Pending"} }))
		updated := encode(makeTApp(func(a *tkestackv1.TApp) {
			a.Spec.Replicas = 4
			a.Spec.Statuses = map[string]tkestackv1.InstanceStatus{"1": "Pending"}
		}))
		if resp := validating.Handle(ctx, tappRequest(admissionv1.Update, updated, stored)); !resp.Allowed {
			t.Errorf("denied: %v", resp.Result)
		}
	})
	t.Run("an undecodable TApp gets a 422 with the field path of each bad value", func(t *testing.T) {
		raw := []byte(`{"apiVersion":"apps.tkestack.io/v1","kind":"TApp","metadata":{"name":"x"},
			"spec":{"replicas":1.5,"template":{"spec":{"containers":[{"name":"c","image":"i","resources":{"requests":{"cpu":"abc"}}}]}}},
			"status":"x"}`)
		resp := validating.Handle(ctx, tappRequest(admissionv1.Create, raw, nil))
		fields := testutil.DeniedFields(t, resp)
		// The rest of the object is validated too, without the two bad values: it has no selector (the
		// defaulting webhook, not called here, would have set one).
		want := []string{"spec.replicas", "spec.template.spec.containers[0].resources.requests[cpu]", "spec.selector"}
		if diff := cmp.Diff(want, fields); diff != "" {
			t.Errorf("causes (-want +got):\n%s", diff)
		}
	})
}

// Both webhooks refuse a TApp past the CRD's counts right after decoding, with a 422 naming each field and
// no patch: the mutating webhook sees the object before the API server's schema check does, and defaulting
// and diffing thousands of pod templates took it longer than the API server waits.
func TestTAppWebhooksCheckBoundsFirst(t *testing.T) {
	app := makeTApp(func(a *tkestackv1.TApp) {
		a.Spec.TemplatePool = map[string]corev1.PodTemplateSpec{}
		for i := range 2000 {
			a.Spec.TemplatePool["t"+strconv.Itoa(i)] = *a.Spec.Template.DeepCopy()
		}
		a.Spec.VolumeClaimTemplates = make([]corev1.PersistentVolumeClaim, tkestackv1.MaxVolumeClaimTemplates+1)
	})
	raw, err := json.Marshal(app)
	if err != nil {
		t.Fatal(err)
	}
	mutating, validating := tappHandlers()
	for name, h := range map[string]admission.Handler{"mutating": mutating, "validating": validating} {
		resp := h.Handle(context.Background(), tappRequest(admissionv1.Create, raw, nil))
		if resp.Allowed || resp.Result == nil || resp.Result.Code != 422 || len(resp.Patches) > 0 {
			t.Errorf("%s: allowed=%t result=%+v patches=%d; want a 422 and no patch", name, resp.Allowed, resp.Result, len(resp.Patches))
			continue
		}
		var fields []string
		for _, c := range resp.Result.Details.Causes {
			fields = append(fields, string(c.Type)+" "+c.Field)
		}
		want := []string{"FieldValueTooMany spec.templatePool", "FieldValueTooMany spec.volumeClaimTemplates"}
		if diff := cmp.Diff(want, fields); diff != "" {
			t.Errorf("%s: causes (-want +got):\n%s", name, diff)
		}
	}
}
