package registry

import (
	"context"
	"net/http"
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	openyurtv1beta1 "github.com/drover-dev/drover/api/openyurt/apps/v1beta1"
	"github.com/drover-dev/drover/internal/kit"
	"github.com/drover-dev/drover/internal/scheme"
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
	nodePoolGVK := openyurtv1beta1.GroupVersion.WithKind("NodePool")
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
