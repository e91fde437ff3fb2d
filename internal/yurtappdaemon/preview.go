package yurtappdaemon

import (
	"context"
	"fmt"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	openyurtv1alpha1 "github.com/drover-dev/drover/api/openyurt/apps/v1alpha1"
	openyurtv1beta1 "github.com/drover-dev/drover/api/openyurt/apps/v1beta1"
	openyurtv1beta2 "github.com/drover-dev/drover/api/openyurt/apps/v1beta2"
	"github.com/drover-dev/drover/internal/preview"
	"github.com/drover-dev/drover/internal/yurtappdaemon/render"
)

// PreviewYurtAppDaemons computes, reading only, what drover's first passes would do to the YurtAppDaemons of
// namespace ("" for every namespace), their ControllerRevisions and their children, as another controller
// (OpenYurt's yurt-manager) or drover left them. It runs the controller's own pool selection,
// classification, adoption rule, rendering and sync check on what it reads, and for every child it would
// write, the difference that write makes: a change under spec.template rolls the child's pods.
func PreviewYurtAppDaemons(ctx context.Context, c client.Reader, namespace string) ([]preview.Report, error) {
	return previewKind(ctx, c, namespace, yurtAppDaemonOwnerKind())
}

// PreviewUnitedDaemonSets is PreviewYurtAppDaemons for UnitedDaemonSets.
func PreviewUnitedDaemonSets(ctx context.Context, c client.Reader, namespace string) ([]preview.Report, error) {
	return previewKind(ctx, c, namespace, unitedDaemonSetOwnerKind())
}

// previewReads is what a preview reads once for all owners.
type previewReads struct {
	pools     []openyurtv1beta1.NodePool
	revisions []appsv1.ControllerRevision
	workloads map[openyurtv1alpha1.TemplateType][]client.Object // every Deployment and StatefulSet read
}

func previewKind[T openyurtv1alpha1.Owner](ctx context.Context, c client.Reader, namespace string, kind ownerKind[T]) ([]preview.Report, error) {
	list := kind.newList()
	if err := c.List(ctx, list, client.InNamespace(namespace)); err != nil {
		return nil, fmt.Errorf("listing %ss: %w", kind.gvk.Kind, err)
	}
	owners := kind.items(list)
	if len(owners) == 0 {
		return nil, nil
	}
	reads, err := readForPreview(ctx, c, namespace)
	if err != nil {
		return nil, err
	}
	out := make([]preview.Report, 0, len(owners))
	for _, owner := range owners {
		out = append(out, previewOwner(owner, kind.gvk.Kind, reads))
	}
	return out, nil
}

// readForPreview lists the NodePools, and the ControllerRevisions, Deployments and StatefulSets of namespace.
func readForPreview(ctx context.Context, c client.Reader, namespace string) (*previewReads, error) {
	pools, err := listPoolsAsStored(ctx, c)
	if err != nil {
		return nil, err
	}
	revs := &appsv1.ControllerRevisionList{}
	if err := c.List(ctx, revs, client.InNamespace(namespace)); err != nil {
		return nil, fmt.Errorf("listing ControllerRevisions: %w", err)
	}
	r := &previewReads{pools: pools, revisions: revs.Items, workloads: map[openyurtv1alpha1.TemplateType][]client.Object{}}
	for _, adapter := range render.Adapters() {
		l := adapter.NewList()
		if err := c.List(ctx, l, client.InNamespace(namespace)); err != nil {
			return nil, fmt.Errorf("listing %ss: %w", adapter.Kind(), err)
		}
		r.workloads[adapter.Kind()] = adapter.Items(l)
	}
	return r, nil
}

// listPoolsAsStored lists the NodePools in v1beta2 where the API server serves it, else in v1beta1, and returns
// them as v1beta1 (the version the controller reads). The version the pools are stored in needs no
// conversion: the preview runs while the NodePool CRD's conversion webhook is another installation's (OpenYurt
// 1.7 stores v1beta2, converted by yurt-manager) or answers no one (yurt-manager stopped); OpenYurt 1.4 to 1.6
// store v1beta1 and serve no v1beta2.
func listPoolsAsStored(ctx context.Context, c client.Reader) ([]openyurtv1beta1.NodePool, error) {
	hubs := &openyurtv1beta2.NodePoolList{}
	err := c.List(ctx, hubs)
	if apimeta.IsNoMatchError(err) {
		pools := &openyurtv1beta1.NodePoolList{}
		if err := c.List(ctx, pools); err != nil {
			return nil, fmt.Errorf("listing NodePools (apps.openyurt.io/v1beta1): %w", err)
		}
		return pools.Items, nil
	}
	if err != nil {
		return nil, fmt.Errorf("listing NodePools (apps.openyurt.io/v1beta2): %w", err)
	}
	out := make([]openyurtv1beta1.NodePool, len(hubs.Items))
	for i := range hubs.Items {
		if err := out[i].ConvertFrom(&hubs.Items[i]); err != nil {
			return nil, fmt.Errorf("converting NodePool %s: %w", hubs.Items[i].Name, err)
		}
	}
	return out, nil
}

// ownerPreview is one owner's preview being built.
type ownerPreview struct {
	owner   openyurtv1alpha1.Owner
	kind    string
	spec    *openyurtv1alpha1.YurtAppDaemonSpec
	tmpl    openyurtv1alpha1.TemplateType
	reads   *previewReads
	rev     string
	pools   poolSet
	byName  map[string]render.Pool
	report  preview.Report
	ownerGV string
}

// previewOwner plans one owner: its revision, its pools, then each child.
func previewOwner(owner openyurtv1alpha1.Owner, kind string, reads *previewReads) preview.Report {
	p := &ownerPreview{owner: owner, kind: kind, spec: owner.DaemonSpec(), tmpl: owner.DaemonSpec().TemplateType(),
		reads: reads, report: preview.Report{Owner: kind + " " + owner.GetNamespace() + "/" + owner.GetName()},
		ownerGV: openyurtv1alpha1.GroupVersion.String()}
	if errs := validateSpec(p.spec); len(errs) > 0 {
		p.notice("the spec is invalid (%v): drover touches no child and reports InvalidSpec", errs.ToAggregate())
		return p.report
	}
	if !p.planRevision() {
		return p.report
	}
	sel, err := metav1.LabelSelectorAsSelector(p.spec.NodePoolSelector)
	if p.spec.NodePoolSelector == nil {
		sel = labels.Nothing()
	} else if err != nil {
		p.notice("spec.nodepoolSelector does not convert (%v): drover touches no child and reports NodePoolListFailed", err)
		return p.report
	}
	p.pools = selectPools(p.reads.pools, sel)
	p.byName = map[string]render.Pool{}
	for _, pool := range p.pools.eligible {
		p.byName[pool.Name] = pool
	}
	for _, name := range p.pools.invalidNames {
		p.notice("NodePool %q is selected but its name is not a label value: skipped (InvalidNodePoolName)", name)
	}
	p.planChildren()
	p.planStatus()
	return p.report
}

func (p *ownerPreview) add(obj string, effect preview.Effect, why string, args ...any) {
	p.report.Items = append(p.report.Items, preview.Item{Object: obj, Effect: effect, Why: fmt.Sprintf(why, args...)})
}

func (p *ownerPreview) notice(format string, args ...any) {
	p.report.Notices = append(p.report.Notices, fmt.Sprintf(format, args...))
}

// planRevision finds the ControllerRevision of the current template as the controller's revision step does:
// an owned one with equal data (kept), an orphan with equal data (adopted), else a new one, its name past
// the names taken.
func (p *ownerPreview) planRevision() bool {
	data, err := render.RevisionData(p.spec)
	if err != nil {
		p.notice("the revision data cannot be computed (%v): drover reports RevisionFailed", err)
		return false
	}
	var owned, orphans []*appsv1.ControllerRevision
	taken := map[string]*appsv1.ControllerRevision{}
	sel, _ := metav1.LabelSelectorAsSelector(p.spec.Selector)
	for i := range p.reads.revisions {
		cr := &p.reads.revisions[i]
		if cr.Namespace != p.owner.GetNamespace() {
			continue
		}
		taken[cr.Name] = cr
		switch {
		case isControlledBy(cr, p.owner.GetUID()):
			owned = append(owned, cr)
		case metav1.GetControllerOfNoCopy(cr) == nil && sel != nil && !sel.Empty() && sel.Matches(labels.Set(cr.Labels)) &&
			sameData(cr.Data.Raw, data):
			orphans = append(orphans, cr)
		}
	}
	sortRevisions(owned)
	top := maxRevision(owned)
	if match := findRevision(owned, data); match != nil {
		p.rev = match.Name
		if match.Revision < top {
			p.add("ControllerRevision "+match.Name, preview.Relabel, "the revision of the current template, renumbered %d -> %d as the newest", match.Revision, top+1)
		} else {
			p.add("ControllerRevision "+match.Name, preview.Keep, "the revision of the current template (same data): reused")
		}
		return true
	}
	if len(orphans) > 0 {
		sortRevisions(orphans)
		p.rev = orphans[len(orphans)-1].Name
		p.add("ControllerRevision "+p.rev, preview.Adopt, "an orphan with the current template's data: drover adds its owner reference")
		return true
	}
	count := copyInt32(p.owner.DaemonStatus().CollisionCount)
	for range maxCollisionRetries {
		name := render.RevisionName(p.owner.GetName(), render.RevisionHash(data, count))
		if taken[name] == nil {
			p.rev = name
			p.add("ControllerRevision "+name, preview.Create, "no revision of this owner holds the current template's data")
			return true
		}
		count = ptr.To(ptr.Deref(count, 0) + 1)
	}
	p.notice("no free ControllerRevision name after %d collisions: drover reports RevisionFailed", maxCollisionRetries)
	return false
}

// planChildren classifies the owned children as the controller does and plans each.
func (p *ownerPreview) planChildren() {
	children := ownedChildren{}
	for kind, objs := range p.reads.workloads {
		for _, obj := range objs {
			if obj.GetNamespace() != p.owner.GetNamespace() || !isControlledBy(obj, p.owner.GetUID()) {
				continue
			}
			if _, labelled := obj.GetLabels()[openyurtv1alpha1.LabelPoolName]; !labelled {
				// The controller caches only workloads with the pool-name label: it never sees this one.
				p.notice("%s is owned but has no %s label, so drover never sees it: it is left alone, and its pool gets another child",
					workloadName(obj), openyurtv1alpha1.LabelPoolName)
				continue
			}
			children[kind] = append(children[kind], obj)
		}
	}
	cls := classify(p.owner.GetName(), p.tmpl, p.pools, children)
	p.planCreates(cls.create)
	for _, pool := range sortedKeys(cls.keep) {
		p.planUpdate(pool, cls.keep[pool], "")
	}
	for _, d := range cls.deletes {
		p.add(workloadName(d.obj), preview.Delete, "%s: %s", d.reason, deleteWhy(d.reason))
	}
	for _, pool := range sortedKeys(cls.otherKind) {
		for _, obj := range cls.otherKind[pool] {
			p.add(workloadName(obj), preview.Delete, "a child of the other workload kind for pool %s, deleted once the pool's %s exists", pool, p.tmpl)
		}
	}
	for _, obj := range cls.unmapped {
		p.add(workloadName(obj), preview.Keep, "owned but mapped to no pool (no ref-nodepool annotation or pool-name label naming a selected pool): left alone, UnmappedWorkload")
	}
	for _, pool := range cls.awaiting {
		p.notice("pool %s: its only child is being deleted; drover creates the new one once it is gone", pool)
	}
}

func deleteWhy(reason string) string {
	switch reason {
	case deleteDeselected:
		return "its pool is no longer selected (or is being deleted); its pods go with it"
	case deleteDuplicate:
		return "a second child for one pool; the one with drover's name, else the oldest, is kept; its pods go with it"
	default:
		return reason
	}
}

// planCreates plans the pools without a child: an adoptable orphan is adopted (then synced like a kept
// child), else a child is created under drover's deterministic name unless another object holds it.
func (p *ownerPreview) planCreates(pools []string) {
	if len(pools) == 0 {
		return
	}
	sel, err := metav1.LabelSelectorAsSelector(p.spec.Selector)
	if err != nil {
		p.notice("spec.selector does not convert (%v): no pool gets a child", err)
		return
	}
	objs := p.reads.workloads[p.tmpl]
	orphans := pickOrphans(objs, sel, p.owner.GetName(), p.tmpl, pools)
	for _, pool := range pools {
		if o := orphans[pool]; o != nil {
			adopted, _ := o.DeepCopyObject().(client.Object)
			adopted.SetOwnerReferences(append(adopted.GetOwnerReferences(), controllerRef(p.owner, openyurtv1alpha1.GroupVersion.WithKind(p.kind))))
			p.add(workloadName(o), preview.Adopt, "an orphan labelled for pool %s that matches spec.selector: drover adds its owner reference", pool)
			p.planUpdate(pool, adopted, "after the adoption, ")
			continue
		}
		name := render.ChildName(p.tmpl, p.owner.GetName(), pool)
		taken := false
		for _, obj := range objs {
			if obj.GetNamespace() == p.owner.GetNamespace() && obj.GetName() == name {
				taken = true
			}
		}
		if taken {
			p.notice("pool %s: the name %s is taken by an object this owner does not control: NameConflict, no child", pool, name)
			continue
		}
		p.add(string(p.tmpl)+" "+name, preview.Create, "pool %s has no child", pool)
	}
}

// planUpdate plans a kept (or just adopted) child: in sync, or the difference the controller's apply makes.
func (p *ownerPreview) planUpdate(pool string, live client.Object, prefix string) {
	res, err := render.Render(render.Input{
		Owner:     render.OwnerRef{APIVersion: p.ownerGV, Kind: p.kind, Name: p.owner.GetName(), UID: p.owner.GetUID()},
		Namespace: p.owner.GetNamespace(), Spec: p.spec, Pool: p.byName[pool], Revision: p.rev, Name: live.GetName(),
	})
	obj := workloadName(live)
	if err != nil {
		p.add(obj, preview.Keep, "%sits rendering fails (%v): left as it is, RenderFailed", prefix, err)
		return
	}
	if render.InSync(res.Body, live, p.owner.GetUID()) {
		p.add(obj, preview.Keep, "%sin sync with its rendering for pool %s", prefix, pool)
		return
	}
	ch, err := diffApply(live, res.Body, p.tmpl)
	if err != nil {
		p.add(obj, preview.Update, "%sdrover applies its rendering; the difference could not be computed: %v", prefix, err)
		return
	}
	switch {
	case len(ch.immutable) > 0:
		p.add(obj, preview.Keep, "%sthe apply is refused, %s cannot change (%s): the child stays as it is and drover reports UpdateFailed for pool %s%s",
			prefix, strings.Join(ch.immutable, ", "), strings.Join(ch.spec, "; "), pool, refusedTemplate(ch))
		p.notice("%s cannot be updated (%s is immutable); delete it to have drover create pool %s's child (its pods are replaced), or leave it as it is",
			obj, strings.Join(ch.immutable, ", "), pool)
	case len(ch.template) > 0:
		p.add(obj, preview.Update, "%sits pod template changes, so its pods roll: %s%s", prefix, strings.Join(ch.template, "; "), alsoChanged(ch))
	case len(ch.spec) > 0:
		p.add(obj, preview.Update, "%sits spec changes outside the pod template, no pod restarts: %s%s", prefix, strings.Join(ch.spec, "; "), metaChanged(ch))
	case len(ch.meta) > 0:
		p.add(obj, preview.Relabel, "%smetadata only, no pod restarts: %s", prefix, strings.Join(ch.meta, ", "))
	default:
		p.add(obj, preview.Keep, "%sthe apply changes nothing", prefix)
	}
}

// refusedTemplate names the pod template changes a refused apply would have made.
func refusedTemplate(ch *applyChange) string {
	if len(ch.template) == 0 {
		return ""
	}
	return "; it would also have changed " + strings.Join(ch.template, "; ")
}

func alsoChanged(ch *applyChange) string {
	s := ""
	if len(ch.spec) > 0 {
		s += "; also " + strings.Join(ch.spec, "; ")
	}
	return s + metaChanged(ch)
}

func metaChanged(ch *applyChange) string {
	if len(ch.meta) == 0 {
		return ""
	}
	return "; metadata: " + strings.Join(ch.meta, ", ")
}

// planStatus says how drover's first status write differs in what users read most.
func (p *ownerPreview) planStatus() {
	st := p.owner.DaemonStatus()
	if st.CurrentRevision == p.rev && apimeta.FindStatusCondition(st.Conditions, openyurtv1alpha1.WorkLoadFailure) != nil {
		return // drover's status already
	}
	var changes []string
	if st.CurrentRevision != p.rev {
		changes = append(changes, fmt.Sprintf("currentRevision %q -> %q (drover names the newest revision)", st.CurrentRevision, p.rev))
	}
	changes = append(changes, "conditions with reasons and messages, WorkLoadFailure, workloadSummary with pools, the workload counters")
	p.add(p.kind+" "+p.owner.GetName(), preview.Relabel, "status rewritten: %s", strings.Join(changes, "; "))
}

func workloadName(obj client.Object) string {
	kind := "Deployment"
	if _, ok := obj.(*appsv1.StatefulSet); ok {
		kind = "StatefulSet"
	}
	return kind + " " + obj.GetName()
}
