package persistentpodstate

import (
	"context"
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kruisev1beta1 "github.com/drover-dev/drover/api/kruise/apps/v1beta1"
	"github.com/drover-dev/drover/internal/kit"
	"github.com/drover-dev/drover/internal/persistentpodstate/whitelist"
)

// generatorEventsAction is the action of the generator's events, recorded on the workload; their reasons
// are the kruisev1alpha1 constants.
const generatorEventsAction = "GeneratePersistentPodState"

// WorkloadKey is the generator's request: one workload, by group, kind, namespace and name.
type WorkloadKey struct {
	Group, Kind, Namespace, Name string
}

// GroupKind returns the workload's group and kind.
func (k WorkloadKey) GroupKind() schema.GroupKind {
	return schema.GroupKind{Group: k.Group, Kind: k.Kind}
}

// Generator creates, updates and deletes the PersistentPodState of a workload from the workload's
// kruise.io annotations (docs/persistentpodstate.md, Generated from annotations). It touches only a PPS the
// workload owns (a controller ownerReference with the workload's UID), and of that only the fields the
// annotations describe: a retention policy or other fields set by hand survive regeneration.
type Generator struct {
	cfg     GeneratorConfig
	backoff *kit.Backoff
}

// GeneratorConfig holds what a Generator needs.
type GeneratorConfig struct {
	// Client reads from the cache and writes to the API server.
	Client client.Client
	// Finder reads workloads (shared with the PersistentPodState controller).
	Finder *Finder
	// Whitelist returns the current custom-workload whitelist (the ConfigMap's latest snapshot).
	Whitelist func() *whitelist.Snapshot
	// Recorder emits events.k8s.io events on workloads.
	Recorder events.EventRecorder
}

// NewGenerator returns a Generator with its conflict backoff.
func NewGenerator(cfg GeneratorConfig) *Generator {
	return &Generator{cfg: cfg, backoff: kit.NewBackoff()}
}

// nn is the key of a workload in the conflict backoff.
func (k WorkloadKey) nn() types.NamespacedName {
	return types.NamespacedName{Namespace: k.Namespace, Name: k.Group + "/" + k.Kind + "/" + k.Name}
}

// Reconcile brings the generated PPS of one workload in line with its annotations.
func (g *Generator) Reconcile(ctx context.Context, key WorkloadKey) (ctrl.Result, error) {
	gk := key.GroupKind()
	if !Supported(g.cfg.Whitelist(), gk) {
		return ctrl.Result{}, nil
	}
	w, err := g.cfg.Finder.Find(ctx, key.Namespace, gk, key.Name, "")
	if asUnavailable(err) != nil {
		return ctrl.Result{}, nil // the PPS controller reports it on the PPS; a watch brings the workload back
	}
	if err != nil || w == nil || w.Deleting {
		return ctrl.Result{}, err // gone or going: garbage collection removes the owned PPS
	}
	desired, problem := DesiredPPS(w.Object, w.APIVersion, w.GK.Kind)
	existing := &kruisev1beta1.PersistentPodState{}
	err = g.cfg.Client.Get(ctx, types.NamespacedName{Namespace: key.Namespace, Name: key.Name}, existing)
	if err != nil && !apierrors.IsNotFound(err) {
		return ctrl.Result{}, fmt.Errorf("reading PersistentPodState %s/%s: %w", key.Namespace, key.Name, err)
	}
	found := err == nil
	var ev kit.Events
	defer ev.Emit(g.cfg.Recorder, w.Object)
	if problem != "" {
		ev.Warning(kruisev1beta1.ReasonInvalidPersistentPodStateAnnotations, generatorEventsAction, nil, "%s", problem)
	}
	owned := found && ownedBy(existing, w.UID)
	switch {
	case found && !owned:
		if desired != nil {
			ev.Warning(kruisev1beta1.ReasonPersistentPodStateNotOwned, generatorEventsAction, existing,
				"PersistentPodState %s exists and is not owned by this workload: drover leaves it alone", key.Name)
		}
		return ctrl.Result{}, nil
	case desired == nil && owned:
		return g.result(key, g.delete(ctx, existing, &ev))
	case desired == nil:
		return ctrl.Result{}, nil
	}
	if errs := validateGenerated(desired); len(errs) > 0 {
		ev.Warning(kruisev1beta1.ReasonInvalidPersistentPodStateAnnotations, generatorEventsAction, nil,
			"the kruise.io annotations describe an invalid PersistentPodState: %s", errs.ToAggregate().Error())
		return ctrl.Result{}, nil
	}
	if !found {
		return g.result(key, g.create(ctx, desired, &ev))
	}
	return g.result(key, g.update(ctx, existing, desired, &ev))
}

// errLostRace is a write that found the cache behind the API server (a PPS that exists already, a stale
// resourceVersion): the pass is tried again shortly, without an error.
var errLostRace = errors.New("lost a race with another writer")

// errRefused is a write the API server refused for its content (kit.Refused): reported with an event, and
// not retried until the workload's annotations (or a PersistentPodState in its way) change.
var errRefused = errors.New("refused by the API server")

// result turns a write step's error into the pass's return through the kit's outcome: a lost race is
// retried quietly after the conflict backoff, a refusal is not retried, another error is returned.
func (g *Generator) result(key WorkloadKey, err error) (ctrl.Result, error) {
	var out kit.Outcome
	switch {
	case errors.Is(err, errLostRace):
		out.Conflict()
	case errors.Is(err, errRefused):
	default:
		out.Error(err)
	}
	return g.backoff.Result(key.nn(), &out)
}

// refused reports a write the API server refused on the workload, and returns errRefused.
func refused(ev *kit.Events, verb string, pps *kruisev1beta1.PersistentPodState, err error) error {
	ev.Warning(kruisev1beta1.ReasonPersistentPodStateRefused, generatorEventsAction, nil,
		"the API server refused to %s PersistentPodState %s from the workload's annotations: %v; drover tries again when they change",
		verb, pps.Name, err)
	return errRefused
}

func (g *Generator) create(ctx context.Context, desired *kruisev1beta1.PersistentPodState, ev *kit.Events) error {
	if err := g.cfg.Client.Create(ctx, desired); err != nil {
		if kit.Harmless(err) {
			return nil
		}
		if apierrors.IsAlreadyExists(err) {
			return errLostRace
		}
		if kit.Refused(err) {
			return refused(ev, "create", desired, err)
		}
		return fmt.Errorf("creating PersistentPodState %s/%s: %w", desired.Namespace, desired.Name, err)
	}
	ev.Normal(kruisev1beta1.ReasonPersistentPodStateCreated, generatorEventsAction, desired, "created PersistentPodState %s from the workload's annotations", desired.Name)
	return nil
}

func (g *Generator) update(ctx context.Context, existing, desired *kruisev1beta1.PersistentPodState, ev *kit.Events) error {
	if managedEqual(existing, desired) {
		return nil
	}
	updated := existing.DeepCopy()
	setManaged(updated, desired)
	if err := g.cfg.Client.Update(ctx, updated); err != nil {
		if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
			return errLostRace
		}
		if kit.Refused(err) {
			return refused(ev, "update", updated, err)
		}
		return fmt.Errorf("updating PersistentPodState %s/%s: %w", existing.Namespace, existing.Name, err)
	}
	ev.Normal(kruisev1beta1.ReasonPersistentPodStateUpdated, generatorEventsAction, updated, "updated PersistentPodState %s from the workload's annotations", updated.Name)
	return nil
}

func (g *Generator) delete(ctx context.Context, existing *kruisev1beta1.PersistentPodState, ev *kit.Events) error {
	// The UID precondition makes sure the object deleted is the one whose ownership was checked.
	err := g.cfg.Client.Delete(ctx, existing, client.Preconditions{UID: ptr.To(existing.UID), ResourceVersion: ptr.To(existing.ResourceVersion)})
	if err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		if apierrors.IsConflict(err) {
			return errLostRace
		}
		return fmt.Errorf("deleting PersistentPodState %s/%s: %w", existing.Namespace, existing.Name, err)
	}
	ev.Normal(kruisev1beta1.ReasonPersistentPodStateDeleted, generatorEventsAction, nil,
		"deleted PersistentPodState %s: the workload's annotations no longer ask for one", existing.Name)
	return nil
}

// ownedBy reports whether pps has a controller ownerReference with uid.
func ownedBy(pps *kruisev1beta1.PersistentPodState, uid types.UID) bool {
	ref := metav1.GetControllerOfNoCopy(pps)
	return ref != nil && ref.UID == uid
}

// DesiredPPS returns the PersistentPodState the annotations of workload ask for, or nil for none. With
// auto-generation exactly "true" and at least one topology annotation listing a key, the PPS is named like
// the workload, owned by it (a controller reference without blockOwnerDeletion, so no finalizer permission
// is needed on custom kinds), targets it, and has a required term, one preferred term of weight 100 and the
// persisted annotation keys as the annotations list them, with no retention policy. problem is set when
// auto-generation is on but no topology key is listed.
func DesiredPPS(workload client.Object, apiVersion, kind string) (desired *kruisev1beta1.PersistentPodState, problem string) {
	ann := workload.GetAnnotations()
	if ann[kruisev1beta1.AnnotationAutoGeneratePersistentPodState] != "true" {
		return nil, ""
	}
	required := kruisev1beta1.ParseCommaList(ann[kruisev1beta1.AnnotationRequiredPersistentTopology])
	preferred := kruisev1beta1.ParseCommaList(ann[kruisev1beta1.AnnotationPreferredPersistentTopology])
	if len(required) == 0 && len(preferred) == 0 {
		return nil, fmt.Sprintf("%s is \"true\" but neither %s nor %s lists a node label key: no PersistentPodState is generated",
			kruisev1beta1.AnnotationAutoGeneratePersistentPodState, kruisev1beta1.AnnotationRequiredPersistentTopology,
			kruisev1beta1.AnnotationPreferredPersistentTopology)
	}
	pps := &kruisev1beta1.PersistentPodState{
		ObjectMeta: metav1.ObjectMeta{Name: workload.GetName(), Namespace: workload.GetNamespace(),
			OwnerReferences: []metav1.OwnerReference{{APIVersion: apiVersion, Kind: kind, Name: workload.GetName(),
				UID: workload.GetUID(), Controller: ptr.To(true)}}},
		Spec: kruisev1beta1.PersistentPodStateSpec{
			TargetRef: kruisev1beta1.TargetReference{APIVersion: apiVersion, Kind: kind, Name: workload.GetName()},
		},
	}
	if len(required) > 0 {
		pps.Spec.RequiredPersistentTopology = &kruisev1beta1.NodeTopologyTerm{Keys: required}
	}
	if len(preferred) > 0 {
		pps.Spec.PreferredPersistentTopology = []kruisev1beta1.PreferredTopologyTerm{{
			Weight: kruisev1beta1.GeneratedPreferredWeight, Preference: kruisev1beta1.NodeTopologyTerm{Keys: preferred}}}
	}
	for _, k := range kruisev1beta1.ParseCommaList(ann[kruisev1beta1.AnnotationPersistentPodAnnotations]) {
		pps.Spec.PersistentPodAnnotations = append(pps.Spec.PersistentPodAnnotations, kruisev1beta1.PersistentPodAnnotation{Key: k})
	}
	if v, ok := ann[kruisev1beta1.AnnotationRestorePersistentPodAnnotations]; ok {
		pps.Annotations = map[string]string{kruisev1beta1.AnnotationRestorePersistentPodAnnotations: v}
	}
	return pps, ""
}

// validateGenerated runs the admission rules on a generated PPS (its kind is supported and its name is its
// own, so only the shape is checked): an invalid label key in an annotation is reported, not sent.
func validateGenerated(pps *kruisev1beta1.PersistentPodState) field.ErrorList {
	return kruisev1beta1.ValidatePersistentPodState(pps, nil, nil, func(schema.GroupKind) bool { return true })
}

// managedEqual reports whether the fields the annotations manage are equal.
func managedEqual(a, b *kruisev1beta1.PersistentPodState) bool {
	av, aok := a.Annotations[kruisev1beta1.AnnotationRestorePersistentPodAnnotations]
	bv, bok := b.Annotations[kruisev1beta1.AnnotationRestorePersistentPodAnnotations]
	return av == bv && aok == bok &&
		equality.Semantic.DeepEqual(a.Spec.RequiredPersistentTopology, b.Spec.RequiredPersistentTopology) &&
		equality.Semantic.DeepEqual(a.Spec.PreferredPersistentTopology, b.Spec.PreferredPersistentTopology) &&
		equality.Semantic.DeepEqual(a.Spec.PersistentPodAnnotations, b.Spec.PersistentPodAnnotations)
}

// setManaged copies the managed fields of from into to: the topology terms, the persisted annotation keys
// and the restore annotation (removed when from has none).
func setManaged(to, from *kruisev1beta1.PersistentPodState) {
	to.Spec.RequiredPersistentTopology = from.Spec.RequiredPersistentTopology.DeepCopy()
	to.Spec.PreferredPersistentTopology = nil
	for _, t := range from.Spec.PreferredPersistentTopology {
		to.Spec.PreferredPersistentTopology = append(to.Spec.PreferredPersistentTopology, *t.DeepCopy())
	}
	to.Spec.PersistentPodAnnotations = append([]kruisev1beta1.PersistentPodAnnotation(nil), from.Spec.PersistentPodAnnotations...)
	v, ok := from.Annotations[kruisev1beta1.AnnotationRestorePersistentPodAnnotations]
	switch {
	case ok:
		if to.Annotations == nil {
			to.Annotations = map[string]string{}
		}
		to.Annotations[kruisev1beta1.AnnotationRestorePersistentPodAnnotations] = v
	default:
		delete(to.Annotations, kruisev1beta1.AnnotationRestorePersistentPodAnnotations)
	}
}
