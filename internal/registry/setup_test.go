package registry

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strconv"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook/conversion"

	openyurtv1beta2 "github.com/drover-dev/drover/api/openyurt/apps/v1beta2"
	"github.com/drover-dev/drover/internal/kit"
	"github.com/drover-dev/drover/internal/scheme"
	"github.com/drover-dev/drover/internal/webhook"
)

func TestParseControllers(t *testing.T) {
	all := []string{"nodepool", "yurtappdaemon", "uniteddaemonset", "tapp", "persistentpodstate", "stagedbindingpolicy"}
	cases := map[string]struct {
		value   string
		want    []string
		wantErr bool
	}{
		"empty means all":      {value: "", want: all},
		"star means all":       {value: "*", want: all},
		"a list":               {value: "nodepool, tapp", want: []string{"nodepool", "tapp"}},
		"blank items ignored":  {value: "nodepool,,", want: []string{"nodepool"}},
		"unknown name":         {value: "nodepool,daemonset", wantErr: true},
		"case matters":         {value: "NodePool", wantErr: true},
		"alias kind by itself": {value: "uniteddaemonset", want: []string{"uniteddaemonset"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := ParseControllers(tc.value, Registry())
			if (err != nil) != tc.wantErr {
				t.Fatalf("ParseControllers(%q) error = %v, wantErr %v", tc.value, err, tc.wantErr)
			}
			if tc.wantErr {
				return
			}
			if diff := cmp.Diff(sets.List(sets.New(tc.want...)), sets.List(got)); diff != "" {
				t.Errorf("ParseControllers(%q) mismatch (-want +got):\n%s", tc.value, diff)
			}
		})
	}
}

func TestSetupSkipsWhatCannotRun(t *testing.T) {
	nodePoolGVK := openyurtv1beta2.GroupVersion.WithKind("NodePool")
	cases := map[string]struct {
		served          []schema.GroupVersionKind
		manageNodePools bool
		want            []string
	}{
		"served and managed":           {served: []schema.GroupVersionKind{nodePoolGVK}, manageNodePools: true, want: []string{"nodepool"}},
		"CRD not served":               {manageNodePools: true, want: nil},
		"managed elsewhere (OpenYurt)": {served: []schema.GroupVersionKind{nodePoolGVK}, manageNodePools: false, want: nil},
		"neither served nor managed":   {manageNodePools: false, want: nil},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			mapper := meta.NewDefaultRESTMapper(nil)
			mapper.Add(schema.GroupVersionKind{Version: "v1", Kind: "Node"}, meta.RESTScopeRoot)
			for _, gvk := range tc.served {
				mapper.Add(gvk, meta.RESTScopeRoot)
			}
			// The manager never connects: informers start only with mgr.Start.
			mgr, err := ctrl.NewManager(&rest.Config{Host: "https://127.0.0.1:1"}, ctrl.Options{
				Scheme:         scheme.New(),
				Metrics:        metricsserver.Options{BindAddress: "0"},
				MapperProvider: func(*rest.Config, *http.Client) (meta.RESTMapper, error) { return mapper, nil },
				Controller:     config.Controller{SkipNameValidation: new(true)},
			})
			if err != nil {
				t.Fatalf("creating manager: %v", err)
			}
			registry := Registry()
			if err := registry[0].Flags.Set("manage-nodepools", strconv.FormatBool(tc.manageNodePools)); err != nil {
				t.Fatal(err)
			}
			started, err := Setup(context.Background(), mgr, registry, sets.New(kit.Names(registry)...), true)
			if err != nil {
				t.Fatalf("Setup: %v", err)
			}
			if diff := cmp.Diff(tc.want, started); diff != "" {
				t.Errorf("started controllers mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// TestOffControllersAdmitUnchanged: every webhook the registry declares is served whatever runs; those of a
// controller that is off (here NodePool, managed elsewhere) admit a request unchanged.
func TestOffControllersAdmitUnchanged(t *testing.T) {
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(openyurtv1beta2.GroupVersion.WithKind("NodePool"), meta.RESTScopeRoot)
	mgr, err := ctrl.NewManager(&rest.Config{Host: "https://127.0.0.1:1"}, ctrl.Options{
		Scheme:         scheme.New(),
		Metrics:        metricsserver.Options{BindAddress: "0"},
		MapperProvider: func(*rest.Config, *http.Client) (meta.RESTMapper, error) { return mapper, nil },
		Controller:     config.Controller{SkipNameValidation: new(true)},
	})
	if err != nil {
		t.Fatalf("creating manager: %v", err)
	}
	controllers := Registry()
	if err := kit.SetFlag(controllers, "manage-nodepools", "false"); err != nil {
		t.Fatal(err)
	}
	if _, err := Setup(context.Background(), mgr, controllers, sets.New(kit.Names(controllers)...), true); err != nil {
		t.Fatalf("Setup: %v", err)
	}
	mux := mgr.GetWebhookServer().WebhookMux()
	for _, c := range controllers {
		for _, h := range c.Webhooks {
			req := httptest.NewRequest(http.MethodPost, h.Path, strings.NewReader(admissionReview(t)))
			req.Header.Set("Content-Type", "application/json")
			if _, pattern := mux.Handler(req); pattern != h.Path {
				t.Errorf("%s (%s): no handler at %s", h.Name, c.Name, h.Path)
				continue
			}
			rec := httptest.NewRecorder()
			mux.ServeHTTP(rec, req)
			var review admissionv1.AdmissionReview
			if err := json.Unmarshal(rec.Body.Bytes(), &review); err != nil || review.Response == nil {
				t.Fatalf("%s: answer %q: %v", h.Name, rec.Body.String(), err)
			}
			if !review.Response.Allowed || review.Response.Patch != nil {
				t.Errorf("%s (%s, off): allowed=%v patch=%s, want allowed unchanged", h.Name, c.Name,
					review.Response.Allowed, review.Response.Patch)
			}
		}
	}
}

// admissionReview is a NodePool CREATE whose defaults a running NodePool webhook would set.
func admissionReview(t *testing.T) string {
	t.Helper()
	review := admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request: &admissionv1.AdmissionRequest{UID: "1", Operation: admissionv1.Create,
			Kind:   metav1.GroupVersionKind{Group: "apps.openyurt.io", Version: "v1beta1", Kind: "NodePool"},
			Object: runtime.RawExtension{Raw: []byte(`{"apiVersion":"apps.openyurt.io/v1beta1","kind":"NodePool","metadata":{"name":"p"},"spec":{}}`)}},
	}
	data, err := json.Marshal(review)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// TestCacheOptions: the controllers' cache needs merged as the manager gets them.
func TestCacheOptions(t *testing.T) {
	cases := map[string]struct {
		enabled []string
		want    map[string]bool // kind -> restricted
	}{
		"YurtAppDaemon alone caches only pool-labelled workloads": {
			enabled: []string{"yurtappdaemon"}, want: map[string]bool{"Deployment": true, "StatefulSet": true},
		},
		"with PersistentPodState every StatefulSet is cached, and one ConfigMap": {
			enabled: nil, want: map[string]bool{"Deployment": true, "ConfigMap": true},
		},
		"nothing enabled restricts nothing": {enabled: []string{"tapp"}, want: map[string]bool{}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			controllers := Registry()
			enabled := sets.New(tc.enabled...)
			if tc.enabled == nil {
				enabled = sets.New(kit.Names(controllers)...)
			}
			opts, err := CacheOptions(controllers, enabled)
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]bool{}
			for obj := range opts.ByObject {
				got[reflect.TypeOf(obj).Elem().Name()] = true
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("restricted kinds (-want +got):\n%s", diff)
			}
			if opts.DefaultTransform == nil {
				t.Error("managedFields are not stripped")
			}
		})
	}
}

// TestSetupServesConversion: the conversion webhook is served once a controller of the registry declares
// ConversionCRDs, also when it is off for another reason (here its kind is not served) and when --controllers
// leaves it out (its CRD may still be installed with the manager as its converter), and not when none does.
func TestSetupServesConversion(t *testing.T) {
	thing := schema.GroupVersionKind{Group: "example.drover.dev", Version: "v2", Kind: "Thing"}
	for name, tc := range map[string]struct {
		enabled  []string
		declared bool
		want     bool
	}{
		"declared and enabled":      {enabled: []string{"thing", "other"}, declared: true, want: true},
		"declared but not selected": {enabled: []string{"other"}, declared: true, want: true},
		"declared by none":          {enabled: []string{"thing", "other"}, want: false},
	} {
		t.Run(name, func(t *testing.T) {
			mgr, err := ctrl.NewManager(&rest.Config{Host: "https://127.0.0.1:1"}, ctrl.Options{
				Scheme:  scheme.New(),
				Metrics: metricsserver.Options{BindAddress: "0"},
				MapperProvider: func(*rest.Config, *http.Client) (meta.RESTMapper, error) {
					return meta.NewDefaultRESTMapper(nil), nil
				},
			})
			if err != nil {
				t.Fatal(err)
			}
			controllers := []*kit.Controller{
				{Name: "thing", Kinds: []schema.GroupVersionKind{thing}},
				{Name: "other", Kinds: []schema.GroupVersionKind{thing}},
			}
			if tc.declared {
				controllers[0].ConversionCRDs = []string{"things.example.drover.dev"}
			}
			if _, err := Setup(context.Background(), mgr, controllers, sets.New(tc.enabled...), true); err != nil {
				t.Fatal(err)
			}
			got := false
			if mux := mgr.GetWebhookServer().WebhookMux(); mux != nil { // nil until a first handler
				_, pattern := mux.Handler(httptest.NewRequest(http.MethodPost, webhook.ConversionPath, strings.NewReader("{}")))
				got = pattern == webhook.ConversionPath
			}
			if got != tc.want {
				t.Errorf("conversion webhook served: %t, want %t", got, tc.want)
			}
		})
	}
}

// TestConversionCRDsAreConvertible: the kind of every CRD a controller converts has one hub among the
// versions the scheme knows and every other version convertible, as the conversion webhook needs.
func TestConversionCRDsAreConvertible(t *testing.T) {
	s := scheme.New()
	for _, c := range Registry() {
		for _, name := range c.ConversionCRDs {
			plural, group, _ := strings.Cut(name, ".")
			var found bool
			for gvk := range s.AllKnownTypes() {
				if gvk.Group != group || strings.ToLower(gvk.Kind)+"s" != plural {
					continue
				}
				found = true
				obj, err := s.New(gvk)
				if err != nil {
					t.Fatal(err)
				}
				if ok, err := conversion.IsConvertible(s, obj); !ok || err != nil {
					t.Errorf("%s (%s): %s is not convertible: %v", name, c.Name, gvk, err)
				}
			}
			if !found {
				t.Errorf("%s (%s): no kind of the scheme", name, c.Name)
			}
		}
	}
}
