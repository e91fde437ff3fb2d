package webhook

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	admissionv1 "k8s.io/api/admission/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/json"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

// defaultingHandler is a mutating admission handler that runs a typed Defaulter, like controller-runtime's
// admission.WithDefaulter, but whose patch holds only what the defaulter changed. controller-runtime diffs
// the request against the re-encoded typed object, so its patch also adds every empty field the typed encoding
// emits (`resources: {}` in each container of each template, an empty status, ...). For TApp that would alter
// the stored pod templates, which the webhook must never touch (their hashes would change). Here the typed object is encoded before
// and after defaulting, and only the difference is applied to the request's own JSON.
type defaultingHandler[T runtime.Object] struct {
	defaulter admission.Defaulter[T]
	decoder   admission.Decoder
	newObj    func() T
}

// newDefaultingWebhook returns the mutating webhook running defaulter on objects made by newObj. Panics in the
// defaulter are recovered into error responses.
func newDefaultingWebhook[T runtime.Object](scheme *runtime.Scheme, newObj func() T, defaulter admission.Defaulter[T]) *admission.Webhook {
	return &admission.Webhook{
		Handler:      &defaultingHandler[T]{defaulter: defaulter, decoder: admission.NewDecoder(scheme), newObj: newObj},
		RecoverPanic: ptr.To(true),
	}
}

// Handle decodes the object, defaults it and returns the patch of the defaulted fields.
func (h *defaultingHandler[T]) Handle(ctx context.Context, req admission.Request) admission.Response {
	if req.Operation == admissionv1.Delete {
		return admission.Allowed("")
	}
	ctx = admission.NewContextWithRequest(ctx, req)
	obj := h.newObj()
	if err := h.decoder.Decode(req, obj); err != nil {
		return admission.Errored(http.StatusBadRequest, err)
	}
	before, err := json.Marshal(obj)
	if err != nil {
		return admission.Errored(http.StatusInternalServerError, err)
	}
	if err := h.defaulter.Default(ctx, obj); err != nil {
		var apiStatus apierrors.APIStatus
		if errors.As(err, &apiStatus) {
			status := apiStatus.Status()
			return admission.Response{AdmissionResponse: admissionv1.AdmissionResponse{Allowed: false, Result: &status}}
		}
		return admission.Denied(err.Error())
	}
	after, err := json.Marshal(obj)
	if err != nil {
		return admission.Errored(http.StatusInternalServerError, err)
	}
	changes := admission.PatchResponseFromRaw(before, after)
	if !changes.Allowed || len(changes.Patches) == 0 {
		return changes
	}
	var doc any
	if err := json.Unmarshal(req.Object.Raw, &doc); err != nil {
		return admission.Errored(http.StatusBadRequest, err)
	}
	for _, op := range changes.Patches {
		if doc, err = applyPatchOperation(doc, op.Operation, op.Path, op.Value); err != nil {
			// Not expected (defaulters set fields, they do not reorder lists): fall back to the full patch,
			// correct though wider.
			return admission.PatchResponseFromRaw(req.Object.Raw, after)
		}
	}
	patched, err := json.Marshal(doc)
	if err != nil {
		return admission.Errored(http.StatusInternalServerError, err)
	}
	return admission.PatchResponseFromRaw(req.Object.Raw, patched)
}

// applyPatchOperation applies one JSON patch operation (add, replace or remove) at a JSON pointer to doc,
// creating missing (or null) parent objects for add and replace. In lists only existing elements can be
// replaced or descended into.
func applyPatchOperation(doc any, op, pointer string, value any) (any, error) {
	if pointer == "" || pointer[0] != '/' {
		return doc, fmt.Errorf("unsupported JSON pointer %q", pointer)
	}
	segs := strings.Split(pointer[1:], "/")
	for i, s := range segs {
		segs[i] = strings.ReplaceAll(strings.ReplaceAll(s, "~1", "/"), "~0", "~")
	}
	if op != "add" && op != "replace" && op != "remove" {
		return doc, fmt.Errorf("unsupported JSON patch operation %q", op)
	}
	parent := doc
	for _, s := range segs[:len(segs)-1] {
		switch p := parent.(type) {
		case map[string]any:
			next, exists := p[s]
			if !exists || next == nil {
				if op == "remove" {
					return doc, nil // nothing to remove
				}
				next = map[string]any{}
				p[s] = next
			}
			parent = next
		case []any:
			i, err := strconv.Atoi(s)
			if err != nil || i < 0 || i >= len(p) {
				return doc, fmt.Errorf("%s: no list element %q", pointer, s)
			}
			parent = p[i]
		default:
			return doc, fmt.Errorf("%s: cannot descend into %T", pointer, parent)
		}
	}
	last := segs[len(segs)-1]
	switch p := parent.(type) {
	case map[string]any:
		if op == "remove" {
			delete(p, last)
		} else {
			p[last] = value
		}
		return doc, nil
	case []any:
		i, err := strconv.Atoi(last)
		if op != "replace" || err != nil || i < 0 || i >= len(p) {
			return doc, fmt.Errorf("%s: only existing list elements can be replaced", pointer)
		}
		p[i] = value
		return doc, nil
	default:
		return doc, fmt.Errorf("%s: cannot set a field of %T", pointer, parent)
	}
}
