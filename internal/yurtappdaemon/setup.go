// Package yurtappdaemon implements the one generic controller behind YurtAppDaemon and UnitedDaemonSet
// (docs/yurtappdaemon.md): a Deployment or StatefulSet per selected NodePool. The pure parts (naming,
// rendering, tweaks, revision hashing, the sync check, structural validation, workload adapters) live in
// the render subpackage, which the webhooks share.
package yurtappdaemon

import (
	"context"
	"fmt"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	openyurtv1alpha1 "github.com/drover-dev/drover/api/openyurt/apps/v1alpha1"
	openyurtv1beta1 "github.com/drover-dev/drover/api/openyurt/apps/v1beta1"
	"github.com/drover-dev/drover/internal/kit"
)

// Controller names, also the values of --controllers.
const (
	YurtAppDaemonControllerName   = "yurtappdaemon"
	UnitedDaemonSetControllerName = "uniteddaemonset"
)

// Owner kinds, the values of the metrics' kind label.
const (
	yurtAppDaemonKind   = "YurtAppDaemon"
	unitedDaemonSetKind = "UnitedDaemonSet"
)

// Options configures the controllers of both kinds; Controllers binds them to its flags.
type Options struct {
	// Workers is the number of concurrent reconciles of each kind (--yurtappdaemon-workers).
	Workers int
	// MaxBatch caps the slow-start batches of creates, updates and deletes (--yurtappdaemon-max-batch).
	MaxBatch int
}

// DefaultWorkers is the default of --yurtappdaemon-workers. A new NodePool concerns every owner that
// selects it, and each owner's pass ends with a status write of up to 150 KB at 1,000 pools; with 3 workers
// (OpenYurt's default), 10 owners queue behind each other's status writes and the new pool waited 1.1-1.5 s
// (p99) for its 10 children, with 10 workers 0.2 s (docs/yurtappdaemon.md, "Scale").
const DefaultWorkers = 10

// Controllers describes the YurtAppDaemon and UnitedDaemonSet controllers to the manager. They share their
// options, flags and indexes; the flags are listed on the first.
func Controllers() []*kit.Controller {
	opts := &Options{}
	fs := kit.NewFlagSet(YurtAppDaemonControllerName)
	fs.IntVar(&opts.Workers, "yurtappdaemon-workers", DefaultWorkers,
		"Concurrent reconciles of each of YurtAppDaemon and UnitedDaemonSet.")
	fs.IntVar(&opts.MaxBatch, "yurtappdaemon-max-batch", defaultMaxBatch,
		"Most concurrent workload creates, updates or deletes of one YurtAppDaemon or UnitedDaemonSet pass (slow-start batches).")
	poolGVK := openyurtv1beta1.GroupVersion.WithKind("NodePool")
	yad, uds := yurtAppDaemonOwnerKind(), unitedDaemonSetOwnerKind()
	return []*kit.Controller{
		{
			Name:            yad.controllerName,
			Kinds:           []schema.GroupVersionKind{yad.gvk, poolGVK},
			Flags:           fs,
			Indexes:         Indexes(),
			RegisterMetrics: RegisterMetrics,
			Setup: func(ctx context.Context, mgr manager.Manager) error {
				return setup(ctx, mgr, *opts, yad)
			},
			Webhooks: []kit.Webhook{
				kit.KindWebhook(true, yad.gvk, "yurtappdaemons", admissionregistrationv1.Create, admissionregistrationv1.Update),
				kit.KindWebhook(false, yad.gvk, "yurtappdaemons", admissionregistrationv1.Create, admissionregistrationv1.Update),
			},
			ServeWebhooks: SetupYurtAppDaemonWebhook,
			CRDs:          []string{"apps.openyurt.io_yurtappdaemons.yaml"},
			Cache:         childCacheNeeds,
			Objects:       []client.Object{&openyurtv1alpha1.YurtAppDaemon{}, &openyurtv1beta1.NodePool{}},
		},
		{
			Name:            uds.controllerName,
			Kinds:           []schema.GroupVersionKind{uds.gvk, poolGVK},
			Indexes:         Indexes(),
			RegisterMetrics: RegisterMetrics,
			Setup: func(ctx context.Context, mgr manager.Manager) error {
				return setup(ctx, mgr, *opts, uds)
			},
			Webhooks: []kit.Webhook{
				kit.KindWebhook(true, uds.gvk, "uniteddaemonsets", admissionregistrationv1.Create, admissionregistrationv1.Update),
				kit.KindWebhook(false, uds.gvk, "uniteddaemonsets", admissionregistrationv1.Create, admissionregistrationv1.Update),
			},
			ServeWebhooks: SetupUnitedDaemonSetWebhook,
			CRDs:          []string{"apps.openyurt.io_uniteddaemonsets.yaml"},
			Cache:         childCacheNeeds,
			Objects:       []client.Object{&openyurtv1alpha1.UnitedDaemonSet{}, &openyurtv1beta1.NodePool{}},
		},
	}
}

// setup registers the controller of one owner kind; the indexes of Indexes must be registered. It runs on the leader only (controller-runtime's
// default) and recovers panics in reconciles.
func setup[T openyurtv1alpha1.Owner](_ context.Context, mgr manager.Manager, opts Options, kind ownerKind[T]) error {
	r := newReconciler(kind, Config{
		Client:    mgr.GetClient(),
		APIReader: mgr.GetAPIReader(),
		Recorder:  mgr.GetEventRecorder("drover-" + kind.controllerName),
		MaxBatch:  opts.MaxBatch,
	})
	children := childHandler{gvk: kind.gvk}
	// Another controller may have the whole type cached (PersistentPodState caches every StatefulSet): only
	// pool-labelled workloads reach the child handler.
	pooled := builder.WithPredicates(predicate.NewPredicateFuncs(isPoolChild))
	pools := poolHandler[T]{reader: mgr.GetClient(), kind: kind, clock: r.pools, now: r.cfg.Clock.Now}
	err := ctrl.NewControllerManagedBy(mgr).
		Named(kind.controllerName).
		For(kind.newObject(), builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&appsv1.Deployment{}, children, pooled).
		Watches(&appsv1.StatefulSet{}, children, pooled).
		Watches(&openyurtv1beta1.NodePool{}, pools).
		WithOptions(controller.Options{MaxConcurrentReconciles: max(opts.Workers, 1), RecoverPanic: ptr.To(true)}).
		Complete(r)
	if err != nil {
		return fmt.Errorf("building the %s controller: %w", kind.controllerName, err)
	}
	return nil
}

// childCacheNeeds: of Deployments and StatefulSets, the controllers need only those carrying
// apps.openyurt.io/pool-name (their children), so drover does not cache every workload of the cluster when
// no other controller needs them.
func childCacheNeeds() []kit.CacheNeed {
	only := cache.ByObject{Label: poolChildSelector()}
	return []kit.CacheNeed{{Object: &appsv1.Deployment{}, Only: only}, {Object: &appsv1.StatefulSet{}, Only: only}}
}

// poolChildSelector selects the objects carrying apps.openyurt.io/pool-name.
func poolChildSelector() labels.Selector {
	hasPool, err := labels.NewRequirement(openyurtv1alpha1.LabelPoolName, selection.Exists, nil)
	if err != nil {
		panic(err) // a constant, valid key: cannot fail
	}
	return labels.NewSelector().Add(*hasPool)
}

// isPoolChild reports whether obj carries apps.openyurt.io/pool-name, as every child does.
func isPoolChild(obj client.Object) bool {
	_, ok := obj.GetLabels()[openyurtv1alpha1.LabelPoolName]
	return ok
}

func yurtAppDaemonOwnerKind() ownerKind[*openyurtv1alpha1.YurtAppDaemon] {
	return ownerKind[*openyurtv1alpha1.YurtAppDaemon]{
		controllerName: YurtAppDaemonControllerName,
		gvk:            openyurtv1alpha1.GroupVersion.WithKind(yurtAppDaemonKind),
		newObject:      func() *openyurtv1alpha1.YurtAppDaemon { return &openyurtv1alpha1.YurtAppDaemon{} },
		newList:        func() client.ObjectList { return &openyurtv1alpha1.YurtAppDaemonList{} },
		items: func(l client.ObjectList) []*openyurtv1alpha1.YurtAppDaemon {
			list, ok := l.(*openyurtv1alpha1.YurtAppDaemonList)
			if !ok {
				return nil
			}
			out := make([]*openyurtv1alpha1.YurtAppDaemon, len(list.Items))
			for i := range list.Items {
				out[i] = &list.Items[i]
			}
			return out
		},
	}
}

func unitedDaemonSetOwnerKind() ownerKind[*openyurtv1alpha1.UnitedDaemonSet] {
	return ownerKind[*openyurtv1alpha1.UnitedDaemonSet]{
		controllerName: UnitedDaemonSetControllerName,
		gvk:            openyurtv1alpha1.GroupVersion.WithKind(unitedDaemonSetKind),
		newObject:      func() *openyurtv1alpha1.UnitedDaemonSet { return &openyurtv1alpha1.UnitedDaemonSet{} },
		newList:        func() client.ObjectList { return &openyurtv1alpha1.UnitedDaemonSetList{} },
		items: func(l client.ObjectList) []*openyurtv1alpha1.UnitedDaemonSet {
			list, ok := l.(*openyurtv1alpha1.UnitedDaemonSetList)
			if !ok {
				return nil
			}
			out := make([]*openyurtv1alpha1.UnitedDaemonSet, len(list.Items))
			for i := range list.Items {
				out[i] = &list.Items[i]
			}
			return out
		},
	}
}
