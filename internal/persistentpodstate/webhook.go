package persistentpodstate

import (
	"context"
	"errors"
	"fmt"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	kruisev1alpha1 "github.com/drover-dev/drover/api/kruise/apps/v1alpha1"
	kruisev1beta1 "github.com/drover-dev/drover/api/kruise/apps/v1beta1"
	"github.com/drover-dev/drover/internal/kit"
	"github.com/drover-dev/drover/internal/persistentpodstate/ppsindex"
	"github.com/drover-dev/drover/internal/webhook"
)

// The validating webhook admits CREATE and UPDATE of persistentpodstates only: the controller's writes to
// /status never reach it. PersistentPodState has no defaults, so it has no defaulting webhook.

// DefaultNodeCheckTimeout is the budget of the live read confirming that a recorded node is gone.
const DefaultNodeCheckTimeout = time.Second

// WebhookOptions configures both PPS webhooks.
type WebhookOptions struct {
	// Allowed says whether a custom workload kind is whitelisted (a snapshot: it never does I/O). nil allows
	// the built-in target kinds only.
	Allowed func(schema.GroupKind) bool
	// Reader is the manager's cache: PersistentPodStates through the target index, Nodes as metadata.
	Reader client.Reader
	// APIReader reads from the API server; it is used only to confirm that a node missing from the cache is
	// gone. nil: never confirmed, so no key is ever dropped.
	APIReader client.Reader
	// Recorder receives the RecordedNodeGone events.
	Recorder events.EventRecorder
	// IdentityKeys are the node label keys that name one node; nil means kubernetes.io/hostname.
	IdentityKeys []string
	// SkipMissingNode drops the identity keys of a recorded node that is confirmed gone.
	SkipMissingNode bool
	// NodeCheckTimeout is the budget of the live read of a node (DefaultNodeCheckTimeout when zero).
	NodeCheckTimeout time.Duration
}

// SetupPersistentPodStateWebhooks registers the PersistentPodState validating webhook and the pod mutating
// webhook that steers pods back to their recorded topology.
func SetupPersistentPodStateWebhooks(mgr manager.Manager, opts WebhookOptions) error {
	if opts.Reader == nil {
		return errors.New("the PersistentPodState webhooks need a cache reader")
	}
	validator := Validator{Reader: opts.Reader, Allowed: opts.Allowed}
	if err := webhook.RegisterValidatingWebhook(mgr, func() *kruisev1beta1.PersistentPodState {
		return &kruisev1beta1.PersistentPodState{}
	}, validator); err != nil {
		return fmt.Errorf("building the PersistentPodState webhook: %w", err)
	}
	mgr.GetWebhookServer().Register(podPersistentPodStatePath, newPodPersistentPodStateWebhook(mgr.GetScheme(), opts))
	return nil
}

var ppsGK = kruisev1beta1.GroupVersion.WithKind("PersistentPodState").GroupKind()

// ppsWebhook declares the validating webhook of PersistentPodState, on the hub version gvk. Its rule names
// that version only, with matchPolicy Equivalent: the API server converts a request made in any other
// version of the CRD (v1alpha1) to the hub before it calls, so one handler on the hub type checks every
// version, and a version added later is covered as it is. Validator names the fields as in the version of
// the request.
func ppsWebhook(gvk schema.GroupVersionKind) kit.Webhook {
	w := kit.KindWebhook(false, gvk, "persistentpodstates", admissionregistrationv1.Create, admissionregistrationv1.Update)
	w.MatchPolicy = admissionregistrationv1.Equivalent
	return w
}

// Validator validates PersistentPodStates on CREATE and UPDATE with
// kruisev1beta1.ValidatePersistentPodState. DELETE is always allowed (and not registered).
type Validator struct {
	// Reader finds the other objects targeting the same workload through the target index (the cache).
	Reader client.Reader
	// Allowed is the custom workload whitelist; nil allows the built-in kinds only.
	Allowed func(schema.GroupKind) bool
}

var _ admission.Validator[*kruisev1beta1.PersistentPodState] = Validator{}

// ValidateCreate applies every rule, including that the kind is allowed and that no other object of the
// namespace targets the same workload.
func (v Validator) ValidateCreate(ctx context.Context, pps *kruisev1beta1.PersistentPodState) (
	admission.Warnings, error) {
	if req, err := admission.RequestFromContext(ctx); err == nil && pps.Namespace == "" {
		pps.Namespace = req.Namespace // the duplicate check compares namespaces
	}
	others, err := v.sameTarget(ctx, pps)
	if err != nil {
		return nil, apierrors.NewInvalid(ppsGK, pps.Name, field.ErrorList{
			field.InternalError(field.NewPath("spec", "targetRef"), err)})
	}
	return nil, invalidPPS(ctx, pps, kruisev1beta1.ValidatePersistentPodState(pps, nil, others, v.Allowed))
}

// ValidateUpdate applies the rules of an update: the target is immutable; its kind and uniqueness are not
// checked again.
func (v Validator) ValidateUpdate(ctx context.Context, oldPPS, newPPS *kruisev1beta1.PersistentPodState) (
	admission.Warnings, error) {
	return nil, invalidPPS(ctx, newPPS, kruisev1beta1.ValidatePersistentPodState(newPPS, oldPPS, nil, v.Allowed))
}

// ValidateDelete allows every delete.
func (Validator) ValidateDelete(context.Context, *kruisev1beta1.PersistentPodState) (admission.Warnings, error) {
	return nil, nil
}

// sameTarget returns the objects of pps's namespace that target the same workload, read through the target
// index. A target that names no workload (an unparsable apiVersion, no kind or name) has none.
func (v Validator) sameTarget(ctx context.Context, pps *kruisev1beta1.PersistentPodState) (
	[]kruisev1beta1.PersistentPodState, error) {
	ref := pps.Spec.TargetRef
	gk, ok := namedTarget(ref)
	if !ok || v.Reader == nil {
		return nil, nil
	}
	list, err := ppsindex.ForTarget(ctx, v.Reader, pps.Namespace, gk, ref.Name)
	if err != nil {
		return nil, err
	}
	// Shallow copies: the objects are the cache's and are only read.
	others := make([]kruisev1beta1.PersistentPodState, len(list))
	for i, o := range list {
		others[i] = *o
	}
	return others, nil
}

// namedTarget returns the group/kind of ref, or false when ref names no workload.
func namedTarget(ref kruisev1beta1.TargetReference) (schema.GroupKind, bool) {
	gk, err := kruisev1beta1.TargetGroupKind(ref)
	return gk, err == nil && ref.Kind != "" && ref.Name != ""
}

// invalidPPS returns a 422 Invalid error holding errs, or nil. For a request made in v1alpha1 (which the API
// server converted to the hub before calling) the errors name the fields of v1alpha1, the ones its author
// wrote: nodeTopologyKeys, not keys.
func invalidPPS(ctx context.Context, pps *kruisev1beta1.PersistentPodState, errs field.ErrorList) error {
	if len(errs) == 0 {
		return nil
	}
	if req, err := admission.RequestFromContext(ctx); err == nil && req.RequestKind != nil &&
		req.RequestKind.Group == ppsGK.Group && req.RequestKind.Version == kruisev1alpha1.GroupVersion.Version {
		errs = kruisev1alpha1.ErrorsFromHub(errs)
	}
	return apierrors.NewInvalid(ppsGK, pps.Name, errs)
}
