package webhook

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	admissionv1 "k8s.io/api/admission/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/drover-dev/drover/internal/kit"
)

// Every kind drover serves has one defaulting and one validating webhook, built here the same way:
//
//   - An object that does not decode into drover's types (a number where the API has a string, an
//     unparsable quantity, ...) is allowed unchanged by the defaulting webhook, which runs before the API
//     server's schema check: the API server then answers with its own 422 and every schema error. What the
//     schema lets through (pod templates stored without a schema) is denied by the validating webhook with a
//     422 whose causes carry the field path of each bad value.
//   - The status of the object is never read: the API server discards it on create and on updates of the
//     main resource, so a status the types cannot hold does not fail admission.
//   - The defaulting patch holds only what the defaulter changed.
//   - Denials are the validator's API status errors (422 Invalid with field causes); panics become 500s.

// KindWebhooks are the defaulting and validating webhooks of one kind with the paths they are served at.
type KindWebhooks struct {
	MutatePath, ValidatePath string
	Mutating, Validating     *admission.Webhook
}

// NewKindWebhooks builds the webhooks of the kind of the objects newObj makes. The paths follow
// controller-runtime's convention (/mutate-<group with dashes>-<version>-<lower-case kind>), which the
// webhook markers name.
func NewKindWebhooks[T client.Object](scheme *runtime.Scheme, newObj func() T,
	defaulter admission.Defaulter[T], validator admission.Validator[T]) (KindWebhooks, error) {
	gvk, err := apiutil.GVKForObject(newObj(), scheme)
	if err != nil {
		return KindWebhooks{}, fmt.Errorf("looking up the kind of the webhooks: %w", err)
	}
	decoder := admission.NewDecoder(scheme)
	return KindWebhooks{
		MutatePath:   kit.WebhookPath(true, gvk),
		ValidatePath: kit.WebhookPath(false, gvk),
		Mutating: &admission.Webhook{
			Handler:      &defaultingHandler[T]{defaulter: defaulter, decoder: decoder, newObj: newObj, gk: gvk.GroupKind()},
			RecoverPanic: ptr.To(true),
		},
		Validating: &admission.Webhook{
			Handler:      &validatingHandler[T]{validator: validator, decoder: decoder, newObj: newObj, gk: gvk.GroupKind()},
			RecoverPanic: ptr.To(true),
		},
	}, nil
}

// RegisterKindWebhooks serves the webhooks of a kind on the manager's webhook server.
func RegisterKindWebhooks[T client.Object](mgr manager.Manager, newObj func() T,
	defaulter admission.Defaulter[T], validator admission.Validator[T]) error {
	w, err := NewKindWebhooks(mgr.GetScheme(), newObj, defaulter, validator)
	if err != nil {
		return err
	}
	mgr.GetWebhookServer().Register(w.MutatePath, w.Mutating)
	mgr.GetWebhookServer().Register(w.ValidatePath, w.Validating)
	return nil
}

// RegisterValidatingWebhook serves only the validating webhook of a kind that has nothing to default. It is
// built exactly as RegisterKindWebhooks builds it (same handler, same path convention); the defaulting
// webhook, built without a defaulter, is never registered.
func RegisterValidatingWebhook[T client.Object](mgr manager.Manager, newObj func() T, validator admission.Validator[T]) error {
	w, err := NewKindWebhooks(mgr.GetScheme(), newObj, nil, validator)
	if err != nil {
		return err
	}
	mgr.GetWebhookServer().Register(w.ValidatePath, w.Validating)
	return nil
}

// defaultingHandler runs a typed Defaulter and patches only what it changed. controller-runtime's
// admission.WithDefaulter diffs the request against the re-encoded typed object, so its patch would also add
// every empty field the typed encoding emits (`resources: {}` in each container, ...), altering stored pod
// templates whose hashes must not change. Here the typed object is encoded before and after defaulting,
// and only the difference is applied to the request's own JSON.
type defaultingHandler[T runtime.Object] struct {
	defaulter admission.Defaulter[T]
	decoder   admission.Decoder
	newObj    func() T
	gk        schema.GroupKind
}

// Bounded is implemented by a kind's Defaulter or Validator when the kind has bounds that are cheap to check
// (counts and sizes its CRD's schema also sets): both handlers check them right after decoding, before any
// expensive step (defaulting and its patch, renders, dry runs, CEL), and refuse an object past them with a
// 422 naming the field. The API server checks the schema only after the mutating webhooks, so without this
// an oversized object would cost the mutating webhook a full defaulting pass.
type Bounded[T any] interface {
	Bounds(obj T) field.ErrorList
}

// boundsOf are the errors of obj against the bounds of impl (a Defaulter or Validator), if it declares any.
func boundsOf[T any](impl any, obj T) field.ErrorList {
	if b, ok := impl.(Bounded[T]); ok {
		return b.Bounds(obj)
	}
	return nil
}

// checkBounds returns the 422 of an object past the bounds of impl, if it declares any.
func checkBounds[T any](impl any, obj T, gk schema.GroupKind, name string) (admission.Response, bool) {
	if errs := boundsOf(impl, obj); len(errs) > 0 {
		return ErrorResponse(apierrors.NewInvalid(gk, name, errs), nil), true
	}
	return admission.Response{}, false
}

// Handle decodes the object, defaults it and returns the patch of the defaulted fields. An object that does
// not decode is allowed unchanged, for the API server's schema check and the validating webhook to report.
func (h *defaultingHandler[T]) Handle(ctx context.Context, req admission.Request) admission.Response {
	if req.Operation != admissionv1.Create && req.Operation != admissionv1.Update {
		return admission.Allowed("")
	}
	ctx = admission.NewContextWithRequest(ctx, req)
	obj := h.newObj()
	if errs := DecodeObject(h.decoder, req.Object, obj); len(errs) > 0 {
		return admission.Allowed("not decodable: left to the API server's schema check and the validating webhook")
	}
	if resp, refused := checkBounds(h.defaulter, obj, h.gk, req.Name); refused {
		return resp
	}
	before, err := json.Marshal(obj)
	if err != nil {
		return admission.Errored(http.StatusInternalServerError, err)
	}
	if err := h.defaulter.Default(ctx, obj); err != nil {
		return ErrorResponse(err, nil)
	}
	after, err := json.Marshal(obj)
	if err != nil {
		return admission.Errored(http.StatusInternalServerError, err)
	}
	return patchRequestObject(req.Object.Raw, before, after)
}

// patchRequestObject returns the response patching raw (the request's object) with the difference between
// before and after (the typed object before and after defaulting).
func patchRequestObject(raw, before, after []byte) admission.Response {
	changes := admission.PatchResponseFromRaw(before, after)
	if !changes.Allowed || len(changes.Patches) == 0 {
		return changes
	}
	var doc any
	if err := json.Unmarshal(raw, &doc); err != nil {
		return admission.Errored(http.StatusInternalServerError, err)
	}
	// Each operation is located in the request's object before any is applied, so that the answer can name
	// exactly what changed in it (exactOps) without diffing the whole object again: a large object costs one
	// diff, of the typed object before and after defaulting.
	planned := planOps(doc, changes.Patches)
	var err error
	for _, op := range changes.Patches {
		if doc, err = applyPatchOperation(doc, op.Operation, op.Path, op.Value); err != nil {
			// Not expected (defaulters set fields, they do not reorder lists): fall back to the full patch,
			// correct though wider.
			return admission.PatchResponseFromRaw(raw, after)
		}
	}
	ops, ok := exactOps(planned, doc)
	if !ok {
		patched, err := json.Marshal(doc)
		if err != nil {
			return admission.Errored(http.StatusInternalServerError, err)
		}
		return admission.PatchResponseFromRaw(raw, patched)
	}
	if len(ops) == 0 {
		return admission.Allowed("")
	}
	return admission.Patched("", ops...)
}

// validatingHandler runs a typed Validator. An object that does not decode is denied with a 422 listing every
// bad value at its field path (DecodeObject). On UPDATE, a stored object that no longer decodes is no
// reason to deny: the new object is then validated as on CREATE, every rule enforced.
type validatingHandler[T client.Object] struct {
	validator admission.Validator[T]
	decoder   admission.Decoder
	newObj    func() T
	gk        schema.GroupKind
}

// Handle decodes the objects of the request and runs the validator for its operation.
func (h *validatingHandler[T]) Handle(ctx context.Context, req admission.Request) admission.Response {
	ctx = admission.NewContextWithRequest(ctx, req)
	obj := h.newObj()
	var warnings admission.Warnings
	var err error
	switch req.Operation {
	case admissionv1.Create, admissionv1.Update:
		if errs := DecodeObject(h.decoder, req.Object, obj); len(errs) > 0 {
			return ErrorResponse(h.undecodable(ctx, req, errs), nil)
		}
		if resp, refused := checkBounds(h.validator, obj, h.gk, req.Name); refused {
			return resp
		}
		warnings, err = h.validate(ctx, req, obj)
	case admissionv1.Delete:
		// The deleted object is in OldObject. Delete rules need its name only when it does not decode.
		if errs := DecodeObject(h.decoder, req.OldObject, obj); len(errs) > 0 {
			obj = h.newObj()
			obj.SetName(req.Name)
			obj.SetNamespace(req.Namespace)
		}
		warnings, err = h.validator.ValidateDelete(ctx, obj)
	default:
		return admission.Allowed("")
	}
	if err != nil {
		return ErrorResponse(err, warnings)
	}
	return admission.Allowed("").WithWarnings(warnings...)
}

// validate runs the validator on obj for a CREATE or an UPDATE. On UPDATE, a stored object that no longer
// decodes is no reason to deny: obj is then validated as on CREATE.
func (h *validatingHandler[T]) validate(ctx context.Context, req admission.Request, obj T) (admission.Warnings, error) {
	old := h.newObj()
	if req.Operation == admissionv1.Update && len(DecodeObject(h.decoder, req.OldObject, old)) == 0 {
		return h.validator.ValidateUpdate(ctx, old, obj)
	}
	return h.validator.ValidateCreate(ctx, obj)
}

// undecodable is the 422 of an object with values that do not decode (errs): those errors, and what the
// validator finds in the rest of the object (see partial.go), so that one answer lists every error.
func (h *validatingHandler[T]) undecodable(ctx context.Context, req admission.Request, errs field.ErrorList) *apierrors.StatusError {
	invalid := apierrors.NewInvalid(h.gk, req.Name, errs)
	removed := fieldsOf(errs)
	rest := h.newObj()
	if !decodeWithout(h.decoder, req.Object.Raw, removed, rest) {
		return invalid
	}
	if berrs := boundsOf(h.validator, rest); len(berrs) > 0 {
		return withValidation(invalid, apierrors.NewInvalid(h.gk, req.Name, berrs), removed)
	}
	_, err := h.validate(ctx, req, rest)
	return withValidation(invalid, err, removed)
}

// ErrorResponse denies with the API status of err (422 Invalid with its causes, 403 Forbidden, ...); an
// error without one is a 422 too, so that no denial reaches the user as a bare message.
func ErrorResponse(err error, warnings admission.Warnings) admission.Response {
	var apiStatus apierrors.APIStatus
	if !errors.As(err, &apiStatus) {
		apiStatus = apierrors.NewInvalid(schema.GroupKind{}, "", field.ErrorList{field.InternalError(field.NewPath("metadata"), err)})
	}
	status := apiStatus.Status()
	return admission.Response{AdmissionResponse: admissionv1.AdmissionResponse{Allowed: false, Result: &status}}.
		WithWarnings(warnings...)
}
