package yurtappdaemon

import (
	"context"
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/drover-dev/drover/internal/kit"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	openyurtv1alpha1 "github.com/drover-dev/drover/api/openyurt/apps/v1alpha1"
	openyurtv1beta1 "github.com/drover-dev/drover/api/openyurt/apps/v1beta1"
	"github.com/drover-dev/drover/internal/scheme"
)

// TestSetup registers the shared indexes and both controllers on a manager that never connects.
func TestSetup(t *testing.T) {
	mapper := meta.NewDefaultRESTMapper(nil)
	for _, gvk := range []schema.GroupVersionKind{
		appsv1.SchemeGroupVersion.WithKind("Deployment"), appsv1.SchemeGroupVersion.WithKind("StatefulSet"),
		appsv1.SchemeGroupVersion.WithKind("ControllerRevision"),
		openyurtv1alpha1.GroupVersion.WithKind(yurtAppDaemonKind), openyurtv1alpha1.GroupVersion.WithKind(unitedDaemonSetKind),
	} {
		mapper.Add(gvk, meta.RESTScopeNamespace)
	}
	mapper.Add(openyurtv1beta1.GroupVersion.WithKind("NodePool"), meta.RESTScopeRoot)
	mgr, err := ctrl.NewManager(&rest.Config{Host: "https://127.0.0.1:1"}, ctrl.Options{
		Scheme:         scheme.New(),
		Metrics:        metricsserver.Options{BindAddress: "0"},
		MapperProvider: func(*rest.Config, *http.Client) (meta.RESTMapper, error) { return mapper, nil },
		Controller:     config.Controller{SkipNameValidation: new(true)},
	})
	if err != nil {
		t.Fatalf("creating manager: %v", err)
	}
	ctx := context.Background()
	started, err := kit.Start(ctx, mgr, Controllers(), sets.New(YurtAppDaemonControllerName, UnitedDaemonSetControllerName),
		prometheus.NewRegistry(), false)
	if err != nil {
		t.Fatalf("kit.Start: %v", err)
	}
	if diff := cmp.Diff([]string{YurtAppDaemonControllerName, UnitedDaemonSetControllerName}, started); diff != "" {
		t.Errorf("started (-want +got):\n%s", diff)
	}
}

// TestReconcileStops: a missing owner or one being deleted is left to garbage collection.
func TestReconcileStops(t *testing.T) {
	tests := map[string]func(k kindCase) []client.Object{
		"not found": func(kindCase) []client.Object { return nil },
		"being deleted": func(k kindCase) []client.Object {
			return []client.Object{k.owner().Deleting().Obj(), pool("east", edgeLabels).Obj(), child("dns-gone", "gone", k.ref())}
		},
	}
	for name, objs := range tests {
		t.Run(name, func(t *testing.T) {
			forEachKind(t, func(t *testing.T, k kindCase) {
				f := newFixture(t, k, objs(k), interceptor.Funcs{})
				if res, err := f.reconcile(); err != nil || !res.IsZero() {
					t.Fatalf("reconcile = %v, %v", res, err)
				}
				if n := f.writes.Get("total"); n != 0 {
					t.Errorf("%d writes: %v", n, f.writes.Take())
				}
			})
		})
	}
}
