// Package stagedbindingpolicy runs StagedBindingPolicy (community.kubestellar.io/v1alpha1): staged
// multi-cluster placement over KubeStellar. For the active stage of each policy it writes a KubeStellar
// BindingPolicy, and it promotes the policy to the next stage when the active one's gates hold (a CEL
// condition over the CombinedStatuses KubeStellar reports, soak time, approval). The pure decision of a
// pass is in the stager package, the expressions in sbpcel. The user guide is docs/stagedbindingpolicy.md;
// the rules are in docs/design/stagedbindingpolicy.md.
//
// The controller runs only on the elected leader; the validating webhook serves on every replica. It needs
// KubeStellar's control.kubestellar.io kinds: without them it is skipped with one log line and the rest of
// the manager runs.
package stagedbindingpolicy

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	communityv1alpha1 "github.com/drover-dev/drover/api/kubestellar/community/v1alpha1"
	controlv1alpha1 "github.com/drover-dev/drover/api/kubestellar/control/v1alpha1"
	"github.com/drover-dev/drover/internal/controller/stagedbindingpolicy/sbpcel"
	"github.com/drover-dev/drover/internal/controller/stagedbindingpolicy/sbpmetrics"
	"github.com/drover-dev/drover/internal/kit"
	"github.com/drover-dev/drover/internal/webhook"
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
	opts := &Options{}
	fs := kit.NewFlagSet(ControllerName)
	fs.IntVar(&opts.Workers, "stagedbindingpolicy-workers", 4, "Concurrent StagedBindingPolicy reconciles.")
	s := &setup{opts: opts, cel: sbpcel.NewCache(sbpcel.Options{OnCompile: sbpmetrics.CompileCacheRequest})}
	return &kit.Controller{
		Name: ControllerName,
		Kinds: []schema.GroupVersionKind{
			communityv1alpha1.GroupVersion.WithKind("StagedBindingPolicy"),
			controlv1alpha1.GroupVersion.WithKind("BindingPolicy"),
			controlv1alpha1.GroupVersion.WithKind("Binding"),
			controlv1alpha1.GroupVersion.WithKind("CombinedStatus"),
		},
		Flags:           fs,
		Indexes:         Indexes(),
		RegisterMetrics: sbpmetrics.Register,
		Setup:           s.run,
		Webhooks:        func(mgr manager.Manager) error { return webhook.SetupStagedBindingPolicyWebhook(mgr, s.cel) },
	}
}

// setup carries the expression cache the controller and the webhook share.
type setup struct {
	opts *Options
	cel  *sbpcel.Cache
}

func (s *setup) run(_ context.Context, mgr manager.Manager) error {
	r := NewReconciler(Reconciler{
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
