package stagedbindingpolicy

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	communityv1alpha1 "github.com/drover-dev/drover/api/kubestellar/community/v1alpha1"
	"github.com/drover-dev/drover/internal/index"
	"github.com/drover-dev/drover/internal/scheme"
)

// newTestManager builds a manager (never started) whose API serves only the kinds given.
func newTestManager(t *testing.T, kinds ...schema.GroupVersionKind) manager.Manager {
	t.Helper()
	mapper := meta.NewDefaultRESTMapper(nil)
	for _, k := range kinds {
		mapper.Add(k, meta.RESTScopeRoot)
	}
	mgr, err := manager.New(&rest.Config{Host: "https://127.0.0.1:1"}, manager.Options{
		Scheme:                 scheme.New(),
		MapperProvider:         func(*rest.Config, *http.Client) (meta.RESTMapper, error) { return mapper, nil },
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
	})
	if err != nil {
		t.Fatal(err)
	}
	return mgr
}

// TestSetupWithoutKubeStellar: without KubeStellar's kinds the controller is not built and nothing fails, so
// the webhook (gated by drover's own kind only) and the manager's other controllers run on; with them, the
// controller is built.
func TestSetupWithoutKubeStellar(t *testing.T) {
	c := Controller()
	if len(c.Kinds) != 1 || c.Kinds[0] != communityv1alpha1.GroupVersion.WithKind("StagedBindingPolicy") {
		t.Fatalf("Kinds = %v: only drover's own kind may gate the webhook", c.Kinds)
	}
	sbp := communityv1alpha1.GroupVersion.WithKind("StagedBindingPolicy")
	for name, tc := range map[string]struct {
		kinds []schema.GroupVersionKind
		built bool
	}{
		"KubeStellar absent":  {kinds: []schema.GroupVersionKind{sbp}},
		"KubeStellar present": {kinds: append([]schema.GroupVersionKind{sbp}, kubeStellarKinds...), built: true},
	} {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			mgr := newTestManager(t, tc.kinds...)
			if err := Controller().Setup(ctx, mgr); err != nil {
				t.Fatalf("Setup: %v", err)
			}
			// The controller's indexes tell whether it was built: registering them again conflicts only if
			// Setup registered them.
			err := index.Register(ctx, mgr.GetFieldIndexer(), Indexes()[:1])
			if built := err != nil && strings.Contains(err.Error(), "conflict"); built != tc.built {
				t.Errorf("controller built = %v, want %v (registering its index again: %v)", built, tc.built, err)
			}
		})
	}
}
