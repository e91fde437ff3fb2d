package yurtappdaemon

import (
	"context"
	"fmt"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"sigs.k8s.io/controller-runtime/pkg/client"

	openyurtv1alpha1 "github.com/drover-dev/drover/api/openyurt/apps/v1alpha1"
	"github.com/drover-dev/drover/internal/yurtappdaemon/render"
)

// workloadKinds are the kinds a child can have, in a fixed order.
var workloadKinds = []openyurtv1alpha1.TemplateType{
	openyurtv1alpha1.DeploymentTemplateType,
	openyurtv1alpha1.StatefulSetTemplateType,
}

// ownedChildren are an owner's children by kind, as read from the cache (shared objects: never mutated).
type ownedChildren map[openyurtv1alpha1.TemplateType][]client.Object

// Reasons a child is deleted.
const (
	deleteDeselected = "deselected"
	deleteDuplicate  = "duplicate"
	deleteOtherKind  = "other kind"
)

// deletion is a child to delete and why.
type deletion struct {
	obj    client.Object
	reason string
}

// classification sorts an owner's children against the eligible pools.
type classification struct {
	// keep maps each eligible pool that has a child of the template kind to the one kept.
	keep map[string]client.Object
	// create lists the eligible pools without a child, sorted.
	create []string
	// awaiting lists the eligible pools whose only child is being deleted: nothing is done until it is gone.
	awaiting []string
	// deletes are the children of pools that are no longer eligible and the duplicates, sorted by name.
	deletes []deletion
	// otherKind maps eligible pools to their children of the other kind, deleted once the pool's child of
	// the template kind exists.
	otherKind map[string][]client.Object
	// unmapped are owned children that map to no pool; they are left alone.
	unmapped []client.Object
}

// isControlledBy reports whether obj's controller ownerReference names the owner with uid.
func isControlledBy(obj client.Object, uid types.UID) bool {
	ref := metav1.GetControllerOfNoCopy(obj)
	return ref != nil && ref.UID == uid
}

// listOwnedChildren reads the owner's children of both kinds from the cache, through the controller-owner
// UID index.
func listOwnedChildren(ctx context.Context, c client.Reader, namespace string, uid types.UID) (ownedChildren, error) {
	out := ownedChildren{}
	for _, kind := range workloadKinds {
		adapter, ok := render.AdapterFor(kind)
		if !ok {
			return nil, fmt.Errorf("no workload adapter for kind %s", kind)
		}
		list := adapter.NewList()
		err := c.List(ctx, list, client.InNamespace(namespace),
			client.MatchingFields{IndexControllerUID: string(uid)}, client.UnsafeDisableDeepCopy)
		if err != nil {
			return nil, fmt.Errorf("listing owned %ss: %w", kind, err)
		}
		for _, obj := range adapter.Items(list) {
			if isControlledBy(obj, uid) {
				out[kind] = append(out[kind], obj)
			}
		}
	}
	return out, nil
}

// poolOf maps a child to its pool: the ref-nodepool annotation, else the pool-name label, else the
// pool whose deterministic name the child has (byName). ok is false for an unmapped child.
func poolOf(obj client.Object, byName map[string]string) (pool string, ok bool) {
	if p := obj.GetAnnotations()[openyurtv1alpha1.AnnotationRefNodePool]; p != "" {
		return p, true
	}
	if p := obj.GetLabels()[openyurtv1alpha1.LabelPoolName]; p != "" {
		return p, true
	}
	p, ok := byName[obj.GetName()]
	return p, ok
}

// deterministicNames maps the deterministic child name of each eligible pool, for kind, to the pool.
func deterministicNames(kind openyurtv1alpha1.TemplateType, owner string, pools []render.Pool) map[string]string {
	out := make(map[string]string, len(pools))
	for i := range pools {
		out[render.ChildName(kind, owner, pools[i].Name)] = pools[i].Name
	}
	return out
}

// classify sorts the owned children of an owner named owner with template kind kind. Children of selected
// pools skipped for their names (InvalidNodePoolName) and children being deleted are left alone.
func classify(owner string, kind openyurtv1alpha1.TemplateType, pools poolSet, children ownedChildren) classification {
	eligible := sets.New(pools.names()...)
	skipped := sets.New(pools.invalidNames...)
	c := classification{keep: map[string]client.Object{}, otherKind: map[string][]client.Object{}}
	candidates := map[string][]client.Object{}
	terminating := sets.New[string]()
	for _, k := range workloadKinds {
		byName := deterministicNames(k, owner, pools.eligible)
		for _, obj := range children[k] {
			pool, mapped := poolOf(obj, byName)
			switch {
			case !obj.GetDeletionTimestamp().IsZero():
				if mapped && k == kind && eligible.Has(pool) {
					terminating.Insert(pool)
				}
			case !mapped:
				c.unmapped = append(c.unmapped, obj)
			case skipped.Has(pool):
			case !eligible.Has(pool):
				c.deletes = append(c.deletes, deletion{obj: obj, reason: deleteDeselected})
			case k != kind:
				c.otherKind[pool] = append(c.otherKind[pool], obj)
			default:
				candidates[pool] = append(candidates[pool], obj)
			}
		}
	}
	for i := range pools.eligible {
		pool := pools.eligible[i].Name
		objs := candidates[pool]
		if len(objs) == 0 {
			if terminating.Has(pool) {
				c.awaiting = append(c.awaiting, pool)
			} else {
				c.create = append(c.create, pool)
			}
			continue
		}
		keeper := pickChild(objs, render.ChildName(kind, owner, pool))
		c.keep[pool] = keeper
		for _, obj := range objs {
			if obj != keeper {
				c.deletes = append(c.deletes, deletion{obj: obj, reason: deleteDuplicate})
			}
		}
	}
	slices.SortFunc(c.deletes, func(a, b deletion) int { return strings.Compare(a.obj.GetName(), b.obj.GetName()) })
	slices.SortFunc(c.unmapped, byName)
	return c
}

// pickChild chooses the child kept among several of one pool: the one with the deterministic name,
// else the oldest by creationTimestamp, then name.
func pickChild(objs []client.Object, name string) client.Object {
	for _, obj := range objs {
		if obj.GetName() == name {
			return obj
		}
	}
	return slices.MinFunc(objs, func(a, b client.Object) int {
		ta, tb := a.GetCreationTimestamp(), b.GetCreationTimestamp()
		switch {
		case ta.Before(&tb):
			return -1
		case tb.Before(&ta):
			return 1
		default:
			return strings.Compare(a.GetName(), b.GetName())
		}
	})
}

func byName(a, b client.Object) int { return strings.Compare(a.GetName(), b.GetName()) }

// findOrphans returns, for the pools about to get a child, an orphan the owner may adopt: an object
// of the template kind in the owner's namespace, without a controller ownerReference, whose labels match
// spec.selector and whose pool-name label names one of those pools. Only such objects are in the cache,
// so this is a cached read.
func findOrphans(ctx context.Context, c client.Reader, owner openyurtv1alpha1.Owner, adapter render.Adapter,
	pools []string) (map[string]client.Object, error) {
	if len(pools) == 0 {
		return nil, nil
	}
	sel, err := metav1.LabelSelectorAsSelector(owner.DaemonSpec().Selector)
	if err != nil {
		return nil, fmt.Errorf("converting spec.selector: %w", err)
	}
	var candidates []client.Object
	for _, pool := range pools {
		list := adapter.NewList()
		err := c.List(ctx, list, client.InNamespace(owner.GetNamespace()), client.MatchingFields{IndexPoolName: pool},
			client.MatchingLabelsSelector{Selector: sel}, client.UnsafeDisableDeepCopy)
		if err != nil {
			return nil, fmt.Errorf("listing %ss to adopt: %w", adapter.Kind(), err)
		}
		candidates = append(candidates, adapter.Items(list)...)
	}
	return pickOrphans(candidates, sel, owner.GetName(), adapter.Kind(), pools), nil
}

// pickOrphans filters candidates to adoptable orphans and picks one per pool (as pickChild does).
func pickOrphans(objs []client.Object, sel labels.Selector, owner string, kind openyurtv1alpha1.TemplateType,
	pools []string) map[string]client.Object {
	want := sets.New(pools...)
	byPool := map[string][]client.Object{}
	for _, obj := range objs {
		pool := obj.GetLabels()[openyurtv1alpha1.LabelPoolName]
		if !want.Has(pool) || metav1.GetControllerOfNoCopy(obj) != nil || !obj.GetDeletionTimestamp().IsZero() ||
			!sel.Matches(labels.Set(obj.GetLabels())) {
			continue
		}
		byPool[pool] = append(byPool[pool], obj)
	}
	out := make(map[string]client.Object, len(byPool))
	for pool, objs := range byPool {
		out[pool] = pickChild(objs, render.ChildName(kind, owner, pool))
	}
	return out
}
