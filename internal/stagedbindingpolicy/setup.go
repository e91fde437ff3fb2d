// Package stagedbindingpolicy runs StagedBindingPolicy (community.kubestellar.io/v1alpha1): staged
// multi-cluster placement over KubeStellar. For the active stage of each policy it writes a KubeStellar
// BindingPolicy, and it promotes the policy to the next stage when the active one's gates hold (a CEL
// condition over the CombinedStatuses KubeStellar reports, soak time, approval). The pure decision of a
// pass is in the stager package, the expressions in sbpcel. The user guide is docs/stagedbindingpolicy.md;
// the rules are in docs/design/stagedbindingpolicy.md.
//
// The controller runs only on the elected leader; the validating webhook serves on every replica. The
// controller needs KubeStellar's control.kubestellar.io kinds: without them it is not built (one error in the
// log), and the webhook and the rest of the manager run on.
package stagedbindingpolicy

import (
	"context"
	"fmt"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	communityv1alpha1 "github.com/drover-dev/drover/api/kubestellar/community/v1alpha1"
	controlv1alpha1 "github.com/drover-dev/drover/api/kubestellar/control/v1alpha1"
	"github.com/drover-dev/drover/internal/index"
	"github.com/drover-dev/drover/internal/kit"
	"github.com/drover-dev/drover/internal/stagedbindingpolicy/sbpcel"
	"github.com/drover-dev/drover/internal/stagedbindingpolicy/sbpmetrics"
)

// ControllerName is the controller's name (--controllers, logs, metrics, event source).
const ControllerName = "stagedbindingpolicy"

// RBAC: drover writes BindingPolicies and reads what KubeStellar makes of them; it never writes Bindings,
// CombinedStatuses or StatusCollectors, and reads no inventory.
//
// +kubebuilder:rbac:groups=community.kubestellar.io,resources=stagedbindingpolicies,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=community.kubestellar.io,resources=stagedbindingpolicies/status,verbs=update;patch
// +kubebuilder:rbac:groups=community.kubestellar.io,resources=stagedbindingpolicies/finalizers,verbs=update
// +kubebuilder:rbac:groups=control.kubestellar.io,resources=bindingpolicies,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=control.kubestellar.io,resources=bindings,verbs=get;list;watch
// +kubebuilder:rbac:groups=control.kubestellar.io,resources=combinedstatuses,verbs=get;list;watch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Options are the controller's flags.
type Options struct {
	Workers int
}

// Controller describes StagedBindingPolicy to the manager: the controller and its validating webhook.
func Controller() *kit.Controller {
	gvk := communityv1alpha1.GroupVersion.WithKind("StagedBindingPolicy")
	opts := &Options{}
	fs := kit.NewFlagSet(ControllerName)
	fs.IntVar(&opts.Workers, "stagedbindingpolicy-workers", 4, "Concurrent StagedBindingPolicy reconciles.")
	s := &setup{opts: opts, cel: sbpcel.NewCache(sbpcel.Options{OnCompile: sbpmetrics.CompileCacheRequest})}
	return &kit.Controller{
		Name: ControllerName,
		// Only drover's own kind gates the webhook; KubeStellar's kinds gate the controller, in run, so that
		// without KubeStellar the webhook still validates (with field paths) while the controller is off.
		Kinds:           []schema.GroupVersionKind{gvk},
		Flags:           fs,
		RegisterMetrics: sbpmetrics.Register,
		Setup:           s.run,
		Webhooks:        []kit.Webhook{kit.KindWebhook(false, gvk, "stagedbindingpolicies", admissionregistrationv1.Create, admissionregistrationv1.Update)},
		ServeWebhooks:   func(mgr manager.Manager) error { return SetupStagedBindingPolicyWebhook(mgr, s.cel) },
		CRDs:            []string{"community.kubestellar.io_stagedbindingpolicies.yaml"},
		Objects:         []client.Object{&communityv1alpha1.StagedBindingPolicy{}, &controlv1alpha1.BindingPolicy{}},
	}
}

// setup carries the expression cache the controller and the webhook share.
type setup struct {
	opts *Options
	cel  *sbpcel.Cache
}

// kubeStellarKinds are the KubeStellar kinds the controller reads and writes.
var kubeStellarKinds = []schema.GroupVersionKind{
	controlv1alpha1.GroupVersion.WithKind("BindingPolicy"),
	controlv1alpha1.GroupVersion.WithKind("Binding"),
	controlv1alpha1.GroupVersion.WithKind("CombinedStatus"),
}

// run builds the controller when KubeStellar's kinds are served. Without them it logs one error and builds
// nothing (no watch, no index on a kind that does not exist); the webhook and the manager's other
// controllers run on. Installing KubeStellar later needs a restart of the manager.
func (s *setup) run(ctx context.Context, mgr manager.Manager) error {
	if err := kit.Served(mgr.GetRESTMapper(), kubeStellarKinds); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "StagedBindingPolicy controller not started: KubeStellar's control.kubestellar.io kinds are not served; the webhook still validates StagedBindingPolicies")
		return nil
	}
	if err := index.Register(ctx, mgr.GetFieldIndexer(), Indexes()); err != nil {
		return err
	}
	r := NewReconciler(Config{
		Client:    mgr.GetClient(),
		APIReader: mgr.GetAPIReader(),
		CEL:       s.cel,
		Recorder:  mgr.GetEventRecorder("drover-" + ControllerName),
	})
	// Status-only updates of the policy (its own writes) do not start a pass; spec and annotation changes
	// (approve, retry) and deletions do.
	changed := predicate.Or(predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{})
	err := ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		For(&communityv1alpha1.StagedBindingPolicy{}, builder.WithPredicates(changed)).
		Owns(&controlv1alpha1.BindingPolicy{}).
		Watches(&controlv1alpha1.BindingPolicy{}, namedBindingPolicyHandler(mgr.GetClient())).
		Watches(&controlv1alpha1.Binding{}, bindingHandler(mgr.GetClient())).
		Watches(combinedStatusObject(), combinedStatusHandler{reader: mgr.GetClient()}).
		WithOptions(controller.Options{MaxConcurrentReconciles: max(s.opts.Workers, 1)}).
		Complete(r)
	if err != nil {
		return fmt.Errorf("building the %s controller: %w", ControllerName, err)
	}
	return nil
}
