package nodepool

import (
	"context"
	"fmt"
	"slices"
	"strings"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	openyurtv1beta1 "github.com/drover-dev/drover/api/openyurt/apps/v1beta1"
	openyurtv1beta2 "github.com/drover-dev/drover/api/openyurt/apps/v1beta2"
	"github.com/drover-dev/drover/internal/nodepool/membership"
	"github.com/drover-dev/drover/internal/webhook"
)

// SetupNodePoolWebhook registers the NodePool defaulting and validating webhooks. It runs only when the
// NodePool controller is set up, whose description has the manager register the node membership index that
// the delete rule reads from the manager's cache.
func SetupNodePoolWebhook(mgr manager.Manager) error {
	err := webhook.RegisterKindWebhooks(mgr, func() *openyurtv1beta2.NodePool { return &openyurtv1beta2.NodePool{} },
		Defaulter{}, Validator{Reader: mgr.GetCache()})
	if err != nil {
		return fmt.Errorf("building the NodePool webhooks: %w", err)
	}
	return nil
}

var nodePoolGK = openyurtv1beta2.GroupVersion.WithKind("NodePool").GroupKind()

// Defaulter defaults NodePools on CREATE and UPDATE.
type Defaulter struct{}

var _ admission.Defaulter[*openyurtv1beta2.NodePool] = Defaulter{}

// Default sets spec.type to Edge when empty and the label nodepool.openyurt.io/type to the lower-case type
// (an unsupported type gets no label; validation rejects it); on CREATE it also sets the election defaults
// (DefaultElection).
func (Defaulter) Default(ctx context.Context, pool *openyurtv1beta2.NodePool) error {
	DefaultNodePool(pool)
	if req, err := admission.RequestFromContext(ctx); err == nil && req.Operation == admissionv1.Create {
		DefaultElection(pool)
	}
	return nil
}

// DefaultElection sets, as OpenYurt does on create, leaderElectionStrategy to random and leaderReplicas to 1
// when unset (or below 1), and adds to poolScopeMetadata the default resources it lacks
// (openyurtv1beta2.DefaultPoolScopeMetadata). A pool created in v1beta1 or v1alpha1 has them already, from
// its conversion.
func DefaultElection(pool *openyurtv1beta2.NodePool) {
	if pool.Spec.LeaderElectionStrategy == "" {
		pool.Spec.LeaderElectionStrategy = string(openyurtv1beta2.ElectionStrategyRandom)
	}
	if pool.Spec.LeaderReplicas <= 0 {
		pool.Spec.LeaderReplicas = 1
	}
	for _, gvr := range openyurtv1beta2.DefaultPoolScopeMetadata() {
		if !slices.Contains(pool.Spec.PoolScopeMetadata, gvr) {
			pool.Spec.PoolScopeMetadata = append(pool.Spec.PoolScopeMetadata, gvr)
		}
	}
}

// DefaultNodePool applies the defaults of Defaulter.Default to pool.
func DefaultNodePool(pool *openyurtv1beta2.NodePool) {
	if pool.Spec.Type == "" {
		pool.Spec.Type = openyurtv1beta2.Edge
	}
	if !nodePoolTypes.Has(string(pool.Spec.Type)) {
		return
	}
	if pool.Labels == nil {
		pool.Labels = make(map[string]string, 1)
	}
	pool.Labels[openyurtv1beta2.LabelNodePoolType] = strings.ToLower(string(pool.Spec.Type))
}

// Validator validates the spec of NodePools on CREATE and UPDATE, and refuses to delete a pool that
// still has members.
type Validator struct {
	// Reader is the manager's cache, holding the node membership index.
	Reader client.Reader
}

var _ admission.Validator[*openyurtv1beta2.NodePool] = Validator{}

// ValidateCreate applies the rules of Validate.
func (Validator) ValidateCreate(_ context.Context, pool *openyurtv1beta2.NodePool) (admission.Warnings, error) {
	return nil, invalid(pool, Validate(pool, nil))
}

// ValidateUpdate applies the rules of Validate with the immutability rules.
func (Validator) ValidateUpdate(_ context.Context, oldPool, newPool *openyurtv1beta2.NodePool) (admission.Warnings, error) {
	return nil, invalid(newPool, Validate(newPool, oldPool))
}

// ValidateDelete refuses the deletion of a pool with members. The members are read through the
// membership index of the cache; if it cannot be read, the request is denied.
func (v Validator) ValidateDelete(ctx context.Context, pool *openyurtv1beta2.NodePool) (admission.Warnings, error) {
	var nodes corev1.NodeList
	err := v.Reader.List(ctx, &nodes, client.MatchingFields{membership.IndexNodeMembership: pool.Name}, client.UnsafeDisableDeepCopy)
	if err != nil {
		return nil, apierrors.NewInternalError(fmt.Errorf("reading the members of NodePool %s, so its deletion is denied: %w", pool.Name, err))
	}
	if n := len(nodes.Items); n > 0 {
		return nil, apierrors.NewForbidden(openyurtv1beta2.GroupVersion.WithResource("nodepools").GroupResource(), pool.Name,
			fmt.Errorf("%d node(s) still belong to the pool; remove the label %s=%s from them first",
				n, openyurtv1beta2.LabelCurrentNodePool, pool.Name))
	}
	return nil, nil
}

// invalid returns a 422 Invalid error holding errs, or nil.
func invalid(pool *openyurtv1beta2.NodePool, errs field.ErrorList) error {
	if len(errs) == 0 {
		return nil
	}
	return apierrors.NewInvalid(nodePoolGK, pool.Name, errs)
}

var (
	nodePoolTypes = sets.New(string(openyurtv1beta2.Edge), string(openyurtv1beta2.Cloud))
	taintEffects  = sets.New(string(corev1.TaintEffectNoSchedule), string(corev1.TaintEffectPreferNoSchedule),
		string(corev1.TaintEffectNoExecute))
	electionStrategies = sets.New(string(openyurtv1beta2.ElectionStrategyRandom), string(openyurtv1beta2.ElectionStrategyMark))
	// reservedLabelKeys are node labels the NodePool controller manages itself; a pool cannot push them.
	reservedLabelKeys = sets.New(openyurtv1beta2.LabelCurrentNodePool, openyurtv1beta2.LabelDesiredNodePool)
)

// ValidateNodePool validates a v1beta1 pool (oldPool nil on CREATE) as the validating webhook validates it
// once the API server converted it to v1beta2: Validate of the two converted.
func ValidateNodePool(newPool, oldPool *openyurtv1beta1.NodePool) field.ErrorList {
	newHub := &openyurtv1beta2.NodePool{}
	if err := newPool.ConvertTo(newHub); err != nil {
		return field.ErrorList{field.InternalError(nil, err)}
	}
	var oldHub *openyurtv1beta2.NodePool
	if oldPool != nil {
		oldHub = &openyurtv1beta2.NodePool{}
		if err := oldPool.ConvertTo(oldHub); err != nil {
			return field.ErrorList{field.InternalError(nil, err)}
		}
	}
	return Validate(newHub, oldHub)
}

// Validate returns every violation of the NodePool spec rules by newPool; oldPool is nil on CREATE.
// The rules drover adds to OpenYurt's (the name, label, reserved-key, taint and leader selector rules) are
// ratcheted: on UPDATE they are enforced only when the field they check changed, so pools stored under
// OpenYurt stay editable.
func Validate(newPool, oldPool *openyurtv1beta2.NodePool) field.ErrorList {
	var errs field.ErrorList
	spec := field.NewPath("spec")
	changed := func(f func(*openyurtv1beta2.NodePool) any) bool {
		return oldPool == nil || !equality.Semantic.DeepEqual(f(oldPool), f(newPool))
	}

	if changed(func(p *openyurtv1beta2.NodePool) any { return p.Name }) {
		for _, msg := range validation.IsValidLabelValue(newPool.Name) {
			errs = append(errs, field.Invalid(field.NewPath("metadata", "name"), newPool.Name, msg))
		}
	}
	if !nodePoolTypes.Has(string(newPool.Spec.Type)) {
		errs = append(errs, field.NotSupported(spec.Child("type"), newPool.Spec.Type, sets.List(nodePoolTypes)))
	}
	if changed(func(p *openyurtv1beta2.NodePool) any { return p.Spec.Labels }) {
		errs = append(errs, validatePoolLabels(newPool.Spec.Labels, spec.Child("labels"))...)
	}
	errs = append(errs, apimachineryvalidation.ValidateAnnotations(newPool.Spec.Annotations, spec.Child("annotations"))...)
	if changed(func(p *openyurtv1beta2.NodePool) any { return p.Spec.Annotations }) {
		if _, ok := newPool.Spec.Annotations[openyurtv1beta2.AnnotationPrevAttrs]; ok {
			errs = append(errs, field.Forbidden(spec.Child("annotations").Key(openyurtv1beta2.AnnotationPrevAttrs),
				"this annotation is managed by the NodePool controller"))
		}
	}
	if changed(func(p *openyurtv1beta2.NodePool) any { return p.Spec.Taints }) {
		errs = append(errs, validatePoolTaints(newPool.Spec.Taints, spec.Child("taints"))...)
	}
	if newPool.Spec.HostNetwork && newPool.Spec.Type == openyurtv1beta2.Cloud {
		errs = append(errs, field.Invalid(spec.Child("hostNetwork"), true, "hostNetwork is not allowed for Cloud pools"))
	}
	errs = append(errs, validateElection(newPool, changed)...)
	if oldPool != nil {
		errs = append(errs, validateNodePoolImmutable(newPool, oldPool)...)
	}
	return errs
}

// validateElection checks the election fields that changed (all on CREATE): leaderElectionStrategy is
// random or mark, as OpenYurt requires, and leaderNodeLabelSelector holds valid label keys and values.
func validateElection(pool *openyurtv1beta2.NodePool, changed func(f func(*openyurtv1beta2.NodePool) any) bool) field.ErrorList {
	var errs field.ErrorList
	spec := field.NewPath("spec")
	if changed(func(p *openyurtv1beta2.NodePool) any { return p.Spec.LeaderElectionStrategy }) &&
		!electionStrategies.Has(pool.Spec.LeaderElectionStrategy) {
		errs = append(errs, field.NotSupported(spec.Child("leaderElectionStrategy"), pool.Spec.LeaderElectionStrategy,
			sets.List(electionStrategies)))
	}
	if changed(func(p *openyurtv1beta2.NodePool) any { return p.Spec.LeaderNodeLabelSelector }) {
		errs = append(errs, metav1validation.ValidateLabels(pool.Spec.LeaderNodeLabelSelector, spec.Child("leaderNodeLabelSelector"))...)
	}
	return errs
}

func validatePoolLabels(labels map[string]string, path *field.Path) field.ErrorList {
	errs := metav1validation.ValidateLabels(labels, path)
	for _, k := range sets.List(sets.KeySet(labels)) {
		if reservedLabelKeys.Has(k) {
			errs = append(errs, field.Forbidden(path.Key(k), "this node label is managed by the NodePool controller"))
		}
	}
	return errs
}

func validatePoolTaints(taints []corev1.Taint, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	type id struct {
		key    string
		effect corev1.TaintEffect
	}
	seen := make(map[id]bool, len(taints))
	for i, t := range taints {
		p := path.Index(i)
		for _, msg := range validation.IsQualifiedName(t.Key) {
			errs = append(errs, field.Invalid(p.Child("key"), t.Key, msg))
		}
		for _, msg := range validation.IsValidLabelValue(t.Value) {
			errs = append(errs, field.Invalid(p.Child("value"), t.Value, msg))
		}
		if !taintEffects.Has(string(t.Effect)) {
			errs = append(errs, field.NotSupported(p.Child("effect"), t.Effect, sets.List(taintEffects)))
		}
		if seen[id{t.Key, t.Effect}] {
			errs = append(errs, field.Duplicate(p, fmt.Sprintf("%s:%s", t.Key, t.Effect)))
		}
		seen[id{t.Key, t.Effect}] = true
	}
	return errs
}

func validateNodePoolImmutable(newPool, oldPool *openyurtv1beta2.NodePool) field.ErrorList {
	var errs field.ErrorList
	spec := field.NewPath("spec")
	oldType := oldPool.Spec.Type
	if oldType == "" { // stored before defaulting; it has always meant Edge
		oldType = openyurtv1beta2.Edge
	}
	if newPool.Spec.Type != oldType {
		errs = append(errs, field.Forbidden(spec.Child("type"), fmt.Sprintf("type is immutable (was %q)", oldType)))
	}
	if newPool.Spec.HostNetwork != oldPool.Spec.HostNetwork {
		errs = append(errs, field.Forbidden(spec.Child("hostNetwork"),
			fmt.Sprintf("hostNetwork is immutable (was %t)", oldPool.Spec.HostNetwork)))
	}
	if newPool.Spec.InterConnectivity != oldPool.Spec.InterConnectivity {
		errs = append(errs, field.Forbidden(spec.Child("interConnectivity"),
			fmt.Sprintf("interConnectivity is immutable (was %t)", oldPool.Spec.InterConnectivity)))
	}
	return errs
}
