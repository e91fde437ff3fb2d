package persistentpodstate

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/drover-dev/drover/internal/webhook"

	"github.com/google/go-cmp/cmp"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	kruisev1beta1 "github.com/drover-dev/drover/api/kruise/apps/v1beta1"
	"github.com/drover-dev/drover/internal/persistentpodstate/ppsindex"
	"github.com/drover-dev/drover/internal/scheme"
	"github.com/drover-dev/drover/internal/testutil"
)

var t0 = metav1.NewTime(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC))

// makePPS returns a valid PersistentPodState in ns targeting the StatefulSet (apps/v1) named target.
func makePPS(ns, name, target string, mods ...func(*kruisev1beta1.PersistentPodState)) *kruisev1beta1.PersistentPodState {
	pps := &kruisev1beta1.PersistentPodState{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps.kruise.io/v1beta1", Kind: "PersistentPodState"},
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, CreationTimestamp: t0},
		Spec: kruisev1beta1.PersistentPodStateSpec{
			TargetRef:                  kruisev1beta1.TargetReference{APIVersion: "apps/v1", Kind: "StatefulSet", Name: target},
			RequiredPersistentTopology: &kruisev1beta1.NodeTopologyTerm{Keys: []string{"topology.kubernetes.io/zone"}},
		},
	}
	for _, m := range mods {
		m(pps)
	}
	return pps
}

func deletingPPS(p *kruisev1beta1.PersistentPodState) {
	p.DeletionTimestamp = &t0
	p.Finalizers = []string{"example.com/hold"}
}

func targetRef(apiVersion, kind, name string) func(*kruisev1beta1.PersistentPodState) {
	return func(p *kruisev1beta1.PersistentPodState) {
		p.Spec.TargetRef = kruisev1beta1.TargetReference{APIVersion: apiVersion, Kind: kind, Name: name}
	}
}

// ppsValidatingHandler returns the validating handler as SetupPersistentPodStateWebhooks registers it, reading
// the stored objects through the production target index.
func ppsValidatingHandler(t *testing.T, allowed func(schema.GroupKind) bool, hooks interceptor.Funcs,
	stored ...client.Object) admission.Handler {
	t.Helper()
	fc := testutil.NewFakeClient(testutil.FakeClientOptions{Objects: stored, Indexes: ppsindex.Indexes(), Hooks: hooks})
	validator := Validator{Reader: fc.Client, Allowed: allowed}
	w, err := webhook.NewKindWebhooks(scheme.New(), func() *kruisev1beta1.PersistentPodState { return &kruisev1beta1.PersistentPodState{} },
		nil, validator)
	if err != nil {
		t.Fatal(err)
	}
	if declared := ppsWebhook(kruisev1beta1.GroupVersion.WithKind("PersistentPodState")).Path; w.ValidatePath != declared {
		t.Fatalf("validating path = %q, not the declared %q", w.ValidatePath, declared)
	}
	return w.Validating
}

// ppsRequest is the admission request the API server sends for obj (and old) converted to the hub, as the
// webhook's rule and matchPolicy Equivalent make it do; requestVersion is the version the request was made
// in ("" for the hub).
func ppsRequest(t *testing.T, op admissionv1.Operation, obj, old *kruisev1beta1.PersistentPodState, requestVersion ...string) admission.Request {
	t.Helper()
	encode := func(p *kruisev1beta1.PersistentPodState) []byte {
		if p == nil {
			return nil
		}
		raw, err := json.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		return raw
	}
	kind := metav1.GroupVersionKind{Group: "apps.kruise.io", Version: "v1beta1", Kind: "PersistentPodState"}
	requestKind := kind
	if len(requestVersion) > 0 {
		requestKind.Version = requestVersion[0]
	}
	return admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
		UID: "1", Operation: op, Namespace: obj.Namespace, Name: obj.Name,
		Kind: kind, RequestKind: &requestKind,
		Object:    runtime.RawExtension{Raw: encode(obj)},
		OldObject: runtime.RawExtension{Raw: encode(old)},
	}}
}

func TestPersistentPodStateValidatingHandler(t *testing.T) {
	custom := schema.GroupKind{Group: "example.com", Kind: "Database"}
	whitelist := func(gk schema.GroupKind) bool { return gk == custom }
	tests := map[string]struct {
		stored     []client.Object
		allowed    func(schema.GroupKind) bool
		op         admissionv1.Operation
		obj, old   *kruisev1beta1.PersistentPodState
		version    string   // of the request: "" for v1beta1
		wantFields []string // nil: allowed
	}{
		"create without others": {
			op: admissionv1.Create, obj: makePPS("ns", "b", "web"),
		},
		"create duplicating a target in the same namespace": {
			stored: []client.Object{makePPS("ns", "a", "web")},
			op:     admissionv1.Create, obj: makePPS("ns", "b", "web"),
			wantFields: []string{"spec.targetRef"},
		},
		"create duplicating a target of another version": {
			stored: []client.Object{makePPS("ns", "a", "web", targetRef("apps/v1beta2", "StatefulSet", "web"))},
			op:     admissionv1.Create, obj: makePPS("ns", "b", "web"),
			wantFields: []string{"spec.targetRef"},
		},
		"create with the same target in another namespace": {
			stored: []client.Object{makePPS("other", "a", "web")},
			op:     admissionv1.Create, obj: makePPS("ns", "b", "web"),
		},
		"create with the same target as a PPS being deleted": {
			stored: []client.Object{makePPS("ns", "a", "web", deletingPPS)},
			op:     admissionv1.Create, obj: makePPS("ns", "b", "web"),
		},
		"create of another workload": {
			stored: []client.Object{makePPS("ns", "a", "db")},
			op:     admissionv1.Create, obj: makePPS("ns", "b", "web"),
		},
		"create targeting a whitelisted kind": {
			allowed: whitelist,
			op:      admissionv1.Create, obj: makePPS("ns", "b", "db", targetRef("example.com/v1", "Database", "db")),
		},
		"create targeting a kind not whitelisted": {
			op: admissionv1.Create, obj: makePPS("ns", "b", "db", targetRef("example.com/v1", "Database", "db")),
			wantFields: []string{"spec.targetRef"},
		},
		"create with an empty targetRef fails two rules": {
			op: admissionv1.Create, obj: makePPS("ns", "b", "web", targetRef("", "", "")),
			wantFields: []string{"spec.targetRef", "spec.targetRef"},
		},
		"update with the same targetRef": {
			op: admissionv1.Update, obj: makePPS("ns", "b", "web"), old: makePPS("ns", "b", "web"),
		},
		"update of a pre-existing duplicate": {
			stored: []client.Object{makePPS("ns", "a", "web")},
			op:     admissionv1.Update, obj: makePPS("ns", "b", "web"), old: makePPS("ns", "b", "web"),
		},
		"update of a kind removed from the whitelist": {
			op:  admissionv1.Update,
			obj: makePPS("ns", "b", "db", targetRef("example.com/v1", "Database", "db")),
			old: makePPS("ns", "b", "db", targetRef("example.com/v1", "Database", "db")),
		},
		"update changing the target name": {
			op: admissionv1.Update, obj: makePPS("ns", "b", "other"), old: makePPS("ns", "b", "web"),
			wantFields: []string{"spec.targetRef"},
		},
		"update changing only the target version": {
			op:  admissionv1.Update,
			obj: makePPS("ns", "b", "web", targetRef("apps/v1beta2", "StatefulSet", "web")), old: makePPS("ns", "b", "web"),
			wantFields: []string{"spec.targetRef"},
		},
		"update breaking a topology rule": {
			op: admissionv1.Update, old: makePPS("ns", "b", "web"),
			obj: makePPS("ns", "b", "web", func(p *kruisev1beta1.PersistentPodState) {
				p.Spec.RequiredPersistentTopology.Keys = nil
			}),
			wantFields: []string{"spec.requiredPersistentTopology.keys"},
		},
		"update made in v1alpha1 breaking a topology rule: the v1alpha1 field is named": {
			op: admissionv1.Update, old: makePPS("ns", "b", "web"), version: "v1alpha1",
			obj: makePPS("ns", "b", "web", func(p *kruisev1beta1.PersistentPodState) {
				p.Spec.RequiredPersistentTopology.Keys = []string{"zone", "bad key"}
				p.Spec.PreferredPersistentTopology = []kruisev1beta1.PreferredTopologyTerm{{Weight: 0}}
			}),
			wantFields: []string{"spec.requiredPersistentTopology.nodeTopologyKeys[1]",
				"spec.preferredPersistentTopology[0].weight", "spec.preferredPersistentTopology[0].preference.nodeTopologyKeys"},
		},
		"create made in v1alpha1 duplicating a target": {
			stored: []client.Object{makePPS("ns", "a", "web")}, version: "v1alpha1",
			op: admissionv1.Create, obj: makePPS("ns", "b", "web"),
			wantFields: []string{"spec.targetRef"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			h := ppsValidatingHandler(t, tc.allowed, interceptor.Funcs{}, tc.stored...)
			var version []string
			if tc.version != "" {
				version = []string{tc.version}
			}
			resp := h.Handle(context.Background(), ppsRequest(t, tc.op, tc.obj, tc.old, version...))
			if tc.wantFields == nil {
				if !resp.Allowed {
					t.Fatalf("denied: %v", resp.Result)
				}
				return
			}
			if diff := cmp.Diff(tc.wantFields, testutil.DeniedFields(t, resp)); diff != "" {
				t.Errorf("causes (-want +got):\n%s", diff)
			}
		})
	}
}

func TestPersistentPodStateValidatorNamesTheConflict(t *testing.T) {
	h := ppsValidatingHandler(t, nil, interceptor.Funcs{}, makePPS("ns", "zz", "web"), makePPS("ns", "aa", "web"))
	resp := h.Handle(context.Background(), ppsRequest(t, admissionv1.Create, makePPS("ns", "new", "web"), nil))
	testutil.DeniedFields(t, resp)
	if got := resp.Result.Details.Causes[0].Message; !strings.Contains(got, `"aa"`) {
		t.Errorf("message %q does not name the first conflicting PPS", got)
	}
}

func TestPersistentPodStateValidatorCacheError(t *testing.T) {
	hooks := interceptor.Funcs{List: func(context.Context, client.WithWatch, client.ObjectList, ...client.ListOption) error {
		return errors.New("cache not synced")
	}}
	h := ppsValidatingHandler(t, nil, hooks)
	resp := h.Handle(context.Background(), ppsRequest(t, admissionv1.Create, makePPS("ns", "b", "web"), nil))
	if diff := cmp.Diff([]string{"spec.targetRef"}, testutil.DeniedFields(t, resp)); diff != "" {
		t.Errorf("causes (-want +got):\n%s", diff)
	}
	if got := resp.Result.Details.Causes[0].Type; got != metav1.CauseType("InternalError") {
		t.Errorf("cause type = %q, want InternalError", got)
	}
	if resp.Result.Code != http.StatusUnprocessableEntity {
		t.Errorf("code = %d, want 422", resp.Result.Code)
	}
}
