package yurtappdaemon

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"time"

	"github.com/drover-dev/drover/internal/webhook"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	openyurtv1alpha1 "github.com/drover-dev/drover/api/openyurt/apps/v1alpha1"
)

// One generic implementation serves both owner kinds; only the declarations (setup.go) and the two Setup
// functions are per kind.

// SetupYurtAppDaemonWebhook registers the YurtAppDaemon defaulting and validating webhooks.
func SetupYurtAppDaemonWebhook(mgr manager.Manager) error {
	return setupOwnerWebhook(mgr, &openyurtv1alpha1.YurtAppDaemon{}, &openyurtv1alpha1.UnitedDaemonSet{})
}

// SetupUnitedDaemonSetWebhook registers the UnitedDaemonSet defaulting and validating webhooks.
func SetupUnitedDaemonSetWebhook(mgr manager.Manager) error {
	return setupOwnerWebhook(mgr, &openyurtv1alpha1.UnitedDaemonSet{}, &openyurtv1alpha1.YurtAppDaemon{})
}

// setupOwnerWebhook registers the webhooks of the owner kind T; other is the other owner kind.
func setupOwnerWebhook[T openyurtv1alpha1.Owner](mgr manager.Manager, obj T, other client.Object) error {
	gvk, err := apiutil.GVKForObject(obj, mgr.GetScheme())
	if err != nil {
		return fmt.Errorf("looking up the owner kind: %w", err)
	}
	// The same-name check reads the other kind from the manager's cache. Its informer is registered here, so that it is
	// cached on every replica (all serve webhooks; the owner controllers run on the leader only) whatever
	// --controllers says. A kind the API server does not serve has no objects to clash with.
	if _, err := mgr.GetCache().GetInformer(context.Background(), other); err != nil && !meta.IsNoMatchError(err) {
		return fmt.Errorf("watching the other owner kind for the name check: %w", err)
	}
	v := OwnerValidator[T]{
		GVK:   gvk,
		Other: other,
		Cache: mgr.GetCache(),
		// The manager's client reads from the cache but writes to the API server: the dry runs reach it.
		DryRun: mgr.GetClient(),
	}
	newObj := func() T { return obj.DeepCopyObject().(T) } //nolint:forcetypeassert // a deep copy has the type of its original
	err = webhook.RegisterKindWebhooks(mgr, newObj, OwnerDefaulter[T]{}, admission.Validator[T](v))
	if err != nil {
		return fmt.Errorf("building the %s webhooks: %w", gvk.Kind, err)
	}
	return nil
}

// OwnerDefaulter defaults YurtAppDaemons or UnitedDaemonSets on CREATE and UPDATE.
type OwnerDefaulter[T openyurtv1alpha1.Owner] struct{}

var (
	_ admission.Defaulter[*openyurtv1alpha1.YurtAppDaemon]   = OwnerDefaulter[*openyurtv1alpha1.YurtAppDaemon]{}
	_ admission.Defaulter[*openyurtv1alpha1.UnitedDaemonSet] = OwnerDefaulter[*openyurtv1alpha1.UnitedDaemonSet]{}
)

// Default applies the defaults (see DefaultOwner).
func (OwnerDefaulter[T]) Default(_ context.Context, obj T) error {
	DefaultOwner(obj)
	return nil
}

// DefaultOwner applies the defaults to obj: revisionHistoryLimit defaults to 10 and spec.selector is copied into the
// chosen template's spec.selector, as upstream. The status is left to the API server, which discards it on
// create. Pod-level fields are not defaulted (upstream forced imagePullPolicy: Always): the API server
// defaults each child when it is created.
func DefaultOwner(obj openyurtv1alpha1.Owner) {
	spec := obj.DaemonSpec()
	if spec.RevisionHistoryLimit == nil {
		limit := int32(defaultRevisionHistoryLimit)
		spec.RevisionHistoryLimit = &limit
	}
	if tmpl := spec.WorkloadTemplate.DeploymentTemplate; tmpl != nil {
		tmpl.Spec.Selector = spec.Selector.DeepCopy()
	}
	if tmpl := spec.WorkloadTemplate.StatefulSetTemplate; tmpl != nil {
		tmpl.Spec.Selector = spec.Selector.DeepCopy()
	}
}

// OwnerValidator validates YurtAppDaemons or UnitedDaemonSets on CREATE and UPDATE; T selects
// the kind. DELETE is always allowed (and not registered).
type OwnerValidator[T openyurtv1alpha1.Owner] struct {
	// GVK is the owner kind validated.
	GVK schema.GroupVersionKind
	// Other is an empty object of the other owner kind, whose namesake the same-name check looks for. It is copied before use.
	Other client.Object
	// Cache is the manager's cache, read for the other owner kind. Nil skips the same-name check.
	Cache client.Reader
	// DryRun sends the server-side dry-run creates of the template. Its writes must reach the API server, never a
	// cache; the manager's client does that. Nil skips the dry run.
	DryRun client.Writer
}

var (
	_ admission.Validator[*openyurtv1alpha1.YurtAppDaemon]   = OwnerValidator[*openyurtv1alpha1.YurtAppDaemon]{}
	_ admission.Validator[*openyurtv1alpha1.UnitedDaemonSet] = OwnerValidator[*openyurtv1alpha1.UnitedDaemonSet]{}
)

// otherKindTimeout bounds the cache read of the same-name check, so that an informer that is still syncing cannot use
// up the webhook's 10 s.
const otherKindTimeout = 2 * time.Second

// ValidateCreate applies the name length, structural, same-name and dry-run checks and returns the
// template warnings.
func (v OwnerValidator[T]) ValidateCreate(ctx context.Context, obj T) (admission.Warnings, error) {
	errs := ValidateOwner(obj, nil)
	warnings := templateWarnings(ctx)
	otherErrs, otherWarnings := v.validateOtherKind(ctx, obj)
	errs = append(errs, otherErrs...)
	warnings = append(warnings, otherWarnings...)
	dryErrs, dryWarnings := v.dryRunTemplate(ctx, obj, nil, errs)
	errs = append(errs, dryErrs...)
	warnings = append(warnings, dryWarnings...)
	return warnings, v.invalid(obj, errs)
}

// ValidateUpdate applies the structural rules (ratcheted), the dry run when the template or the tweaks
// changed, and the immutability rules (selector, template kind, StatefulSet fields). Template warnings are returned only when the template changed.
func (v OwnerValidator[T]) ValidateUpdate(ctx context.Context, oldObj, newObj T) (admission.Warnings, error) {
	errs := ValidateOwner(newObj, oldObj)
	var warnings admission.Warnings
	if templateChanged(oldObj, newObj) {
		warnings = templateWarnings(ctx)
	}
	dryErrs, dryWarnings := v.dryRunTemplate(ctx, newObj, oldObj, errs)
	errs = append(errs, dryErrs...)
	warnings = append(warnings, dryWarnings...)
	return warnings, v.invalid(newObj, errs)
}

// ValidateDelete allows every delete: deleting an owner garbage-collects its children.
func (OwnerValidator[T]) ValidateDelete(context.Context, T) (admission.Warnings, error) {
	return nil, nil
}

// invalid returns a 422 Invalid error holding errs, or nil.
func (v OwnerValidator[T]) invalid(obj T, errs field.ErrorList) error {
	if len(errs) == 0 {
		return nil
	}
	return apierrors.NewInvalid(v.GVK.GroupKind(), obj.GetName(), errs)
}

// validateOtherKind rejects on CREATE a YurtAppDaemon and a UnitedDaemonSet with the same
// namespace and name would render children with the same names, so the second of the pair is rejected. The
// other kind is read from the manager's cache. When that kind is not served or not cached the check is
// skipped; any other failure to read admits the request with a warning, since the controller still reports
// the resulting NameConflict.
func (v OwnerValidator[T]) validateOtherKind(ctx context.Context, obj T) (field.ErrorList, admission.Warnings) {
	if v.Cache == nil || v.Other == nil || obj.GetName() == "" { // no name yet: generateName is resolved later
		return nil, nil
	}
	other, ok := v.Other.DeepCopyObject().(client.Object)
	if !ok {
		return nil, nil
	}
	otherKind := kindOf(other)
	ctx, cancel := context.WithTimeout(ctx, otherKindTimeout)
	defer cancel()
	err := v.Cache.Get(ctx, client.ObjectKeyFromObject(obj), other)
	var notCached *cache.ErrResourceNotCached
	switch {
	case err == nil:
		e := field.Duplicate(field.NewPath("metadata", "name"), obj.GetName())
		e.Detail = fmt.Sprintf("a %s with this name exists in namespace %s; both would render the same children",
			otherKind, obj.GetNamespace())
		return field.ErrorList{e}, nil
	case apierrors.IsNotFound(err), meta.IsNoMatchError(err), errors.As(err, &notCached):
		return nil, nil
	default:
		return nil, admission.Warnings{fmt.Sprintf("could not check for a %s named %s in namespace %s: %v",
			otherKind, obj.GetName(), obj.GetNamespace(), err)}
	}
}

// kindOf names the kind of a typed owner object.
func kindOf(obj client.Object) string {
	return reflect.TypeOf(obj).Elem().Name()
}
