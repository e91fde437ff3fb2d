package webhook

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/applyconfigurations"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/drover-dev/drover/internal/kit"
)

// The server-side dry runs of the webhooks: an object the controller would create is rendered from the
// template being admitted and sent as a dry-run create, so that Kubernetes' own validation (which drover
// cannot import) checks it. The API server's Invalid causes are mapped back onto the admitted object's field
// paths. The pieces here do not depend on the kind: the YurtAppDaemon webhook sends children
// (yurtappdaemon_webhook_dryrun.go), the TApp webhook pods (tapp_webhook_dryrun.go).

const (
	// dryRunBudget bounds all dry runs of one request, waiting for a slot included: an admission answer takes at
	// most about this long plus the cheap checks, however large the object and however many requests come at
	// once (the largest valid TApp renders 33 templates). What the budget leaves unchecked is admitted with a
	// warning (DryRunWarnings): Kubernetes checks it when the controller creates the object, and the controller
	// reports a refusal as a condition and an event.
	dryRunBudget = 2 * time.Second
	// dryRunConcurrency bounds the dry runs of one request in flight.
	dryRunConcurrency = 8
	// dryRunSlots bounds the dry runs in flight of all requests together, so that six large objects sent at
	// once queue for the API server instead of sending it 48 pod creates at a time.
	dryRunSlots = 8
)

// dryRunSlot is the process-wide semaphore of dryRunSlots.
var dryRunSlot = make(chan struct{}, dryRunSlots)

// dryRunExecutor runs the dry runs of one request: at most dryRunConcurrency at once, in doubling batches
// that stop after a batch with a failure, so an API server that times out or refuses every object (an
// admission plugin such as Pod Security, a terminating namespace) costs one or two calls, not one per
// template. An Invalid answer is a result, not a failure (dryRunCreate).
var dryRunExecutor = kit.Executor{Max: dryRunConcurrency, SlowStart: true}

// DryRunResult is what one dry run found: the API server's Invalid causes, or for an accepted object the
// causes of what server-side apply could not hold and of the fields it dropped (with applied). The causes'
// fields are relative to the object sent.
type DryRunResult struct {
	Causes []metav1.StatusCause
}

// RunDryRuns sends every object as a dry-run create, all within one dryRunBudget, and returns the result of
// each in the order of objs. A result is nil for an object not sent (an earlier batch failed); err is the
// first failure that is not Invalid, which the caller turns into a warning (DryRunWarnings). With
// applied (the controller writes the object with server-side apply and compares it with its rendering), an
// accepted object is checked against the apply schema (applyCauses) and compared with what the API server
// returned (droppedFieldCauses).
func RunDryRuns(ctx context.Context, w client.Writer, objs []client.Object, applied bool) ([]*DryRunResult, error) {
	ctx, cancel := context.WithTimeout(ctx, dryRunBudget)
	defer cancel()
	attempts := kit.Run(ctx, dryRunExecutor, objs, func(ctx context.Context, obj client.Object) (*DryRunResult, error) {
		return dryRunCreate(ctx, w, obj, applied)
	})
	out := make([]*DryRunResult, len(objs))
	var firstErr error
	for i, a := range attempts {
		switch {
		case !a.Done:
		case a.Err != nil:
			if firstErr == nil {
				firstErr = a.Err
			}
		default:
			out[i] = a.Out
		}
	}
	return out, firstErr
}

// dryRunCreate sends a copy of obj as a dry-run create. An Invalid rejection gives the API server's causes;
// any other failure is returned as an error.
func dryRunCreate(ctx context.Context, w client.Writer, obj client.Object, applied bool) (*DryRunResult, error) {
	sent, ok := obj.DeepCopyObject().(client.Object)
	if !ok {
		return nil, fmt.Errorf("copying the %s", kindName(obj))
	}
	select {
	case dryRunSlot <- struct{}{}:
		defer func() { <-dryRunSlot }()
	case <-ctx.Done():
		return nil, fmt.Errorf("dry-run create of the %s: waiting for a slot: %w", kindName(obj), context.Cause(ctx))
	}
	err := w.Create(ctx, sent, client.DryRunAll)
	var apiStatus apierrors.APIStatus
	switch {
	case err == nil:
		if !applied {
			return &DryRunResult{}, nil
		}
		return &DryRunResult{Causes: append(applyCauses(obj), droppedFieldCauses(obj, sent)...)}, nil
	case apierrors.IsInvalid(err) && errors.As(err, &apiStatus):
		status := apiStatus.Status()
		return &DryRunResult{Causes: statusCauses(&status)}, nil
	default:
		return nil, fmt.Errorf("dry-run create of the %s: %w", kindName(obj), err)
	}
}

// kindName names the kind of obj: its apiVersion's kind, else its Go type.
func kindName(obj runtime.Object) string {
	if k := obj.GetObjectKind().GroupVersionKind().Kind; k != "" {
		return k
	}
	t := reflect.TypeOf(obj)
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t.Name()
}

// DryRunWarnings turns a dry-run failure that is not Invalid into an admission warning: what was not checked,
// and what the controller creates from it.
func DryRunWarnings(what, creates string, err error) admission.Warnings {
	return admission.Warnings{fmt.Sprintf(
		"%s not checked by Kubernetes (%v); the controller reports any error when it creates %s", what, err, creates)}
}

// applyTypeConverter holds the server-side apply schema of Kubernetes' own kinds, as client-go embeds it;
// parsing it is expensive, so it is built on first use.
var applyTypeConverter = sync.OnceValue(func() managedfields.TypeConverter {
	return applyconfigurations.NewTypeConverter(clientgoscheme.Scheme)
})

// applyCauses checks that server-side apply can hold obj, which the API server's create does not: a list
// keyed for apply (containers by name, ports by port and protocol, env by name, ...) with two entries of the
// same key is created with only a warning, but every apply of it then fails. One cause per problem, at the
// field path the apply schema names (a keyed list element shown as [key="value"]).
func applyCauses(obj client.Object) []metav1.StatusCause {
	if obj.GetObjectKind().GroupVersionKind().Empty() { // a typed object: its kind comes from the scheme
		gvks, _, err := clientgoscheme.Scheme.ObjectKinds(obj)
		if err != nil || len(gvks) == 0 {
			return nil // not a Kubernetes kind: nothing to check it against
		}
		copied, ok := obj.DeepCopyObject().(client.Object)
		if !ok {
			return nil
		}
		copied.GetObjectKind().SetGroupVersionKind(gvks[0])
		obj = copied
	}
	_, err := applyTypeConverter().ObjectToTyped(obj)
	if err == nil {
		return nil
	}
	var causes []metav1.StatusCause
	for _, line := range strings.Split(err.Error(), "\n") {
		line = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(line), "errors:"))
		if line == "" {
			continue
		}
		c := metav1.StatusCause{Type: metav1.CauseType(field.ErrorTypeInvalid), Message: line}
		if path, msg, ok := strings.Cut(line, ": "); ok && strings.HasPrefix(path, ".") && !strings.Contains(path, " ") {
			c.Field, c.Message = strings.TrimPrefix(path, "."), msg+" (server-side apply, which the controller uses, refuses it)"
		}
		causes = append(causes, c)
	}
	return causes
}

// droppedFieldMessage is the detail of a field the API server dropped from an accepted object.
const droppedFieldMessage = "this API server drops this field (a feature it does not enable), so the child would " +
	"never match the template; remove it"

// droppedFieldCauses compares the spec of the object sent with the spec the API server returned from an
// accepted dry-run create (the object as it would be stored) and returns a Forbidden cause for every value
// present in the one sent and absent from the one returned: a field of a feature the server does not enable,
// which it drops silently. Empty values (nil, {}, [], "", 0, false, and maps or lists holding only those)
// are ignored, since encodings differ in whether they spell them out. Values that changed are not reported:
// the server defaults and normalizes.
func droppedFieldCauses(sent, returned runtime.Object) []metav1.StatusCause {
	s, err := runtime.DefaultUnstructuredConverter.ToUnstructured(sent)
	if err != nil {
		return nil
	}
	r, err := runtime.DefaultUnstructuredConverter.ToUnstructured(returned)
	if err != nil {
		return nil
	}
	var causes []metav1.StatusCause
	for _, p := range droppedFields(s["spec"], r["spec"], field.NewPath("spec")) {
		causes = append(causes, metav1.StatusCause{Type: metav1.CauseType(field.ErrorTypeForbidden),
			Field: p.String(), Message: droppedFieldMessage})
	}
	return causes
}

// droppedFields returns the paths below path of the non-empty values of sent that got lacks. Maps are
// compared by key, lists by index; values of different types are not compared further.
func droppedFields(sent, got any, path *field.Path) []*field.Path {
	var out []*field.Path
	switch s := sent.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return nil
		}
		for _, k := range slices.Sorted(maps.Keys(s)) {
			if IsEmptyValue(s[k]) {
				continue
			}
			if g[k] == nil {
				out = append(out, path.Child(k))
				continue
			}
			out = append(out, droppedFields(s[k], g[k], path.Child(k))...)
		}
	case []any:
		g, ok := got.([]any)
		if !ok {
			return nil
		}
		for i, v := range s {
			switch {
			case IsEmptyValue(v):
			case i >= len(g) || g[i] == nil:
				out = append(out, path.Index(i))
			default:
				out = append(out, droppedFields(v, g[i], path.Index(i))...)
			}
		}
	}
	return out
}

// IsEmptyValue reports whether v is nil, "", 0, false, or a map or list holding only empty values.
func IsEmptyValue(v any) bool {
	switch x := v.(type) {
	case nil:
		return true
	case string:
		return x == ""
	case bool:
		return !x
	case int64:
		return x == 0
	case int:
		return x == 0
	case int32:
		return x == 0
	case float64:
		return x == 0
	case map[string]any:
		for _, e := range x {
			if !IsEmptyValue(e) {
				return false
			}
		}
		return true
	case []any:
		for _, e := range x {
			if !IsEmptyValue(e) {
				return false
			}
		}
		return true
	default:
		return false
	}
}

// RequestNamespace returns namespace, or when it is empty (not yet filled in from the request URL) the
// namespace of the admission request in ctx.
func RequestNamespace(ctx context.Context, namespace string) string {
	if namespace == "" {
		if req, err := admission.RequestFromContext(ctx); err == nil {
			namespace = req.Namespace
		}
	}
	return namespace
}

// HasErrorAt reports whether errs holds an error at path or below it.
func HasErrorAt(errs field.ErrorList, path string) bool {
	for _, e := range errs {
		if HasFieldPrefix(e.Field, path) {
			return true
		}
	}
	return false
}

// statusCauses returns the causes of an Invalid status; one without causes gives one cause for the whole
// object.
func statusCauses(status *metav1.Status) []metav1.StatusCause {
	if status == nil {
		return nil
	}
	if status.Details != nil && len(status.Details.Causes) > 0 {
		return status.Details.Causes
	}
	return []metav1.StatusCause{{Type: metav1.CauseTypeFieldValueInvalid, Message: status.Message}}
}

// CauseKey identifies a cause, for reporting a cause found by several dry runs of one template once.
func CauseKey(c metav1.StatusCause) string {
	return string(c.Type) + "\x00" + c.Field + "\x00" + c.Message
}

// fieldErrorTypes are the cause types the API server produces from field errors.
var fieldErrorTypes = sets.New(field.ErrorTypeNotFound, field.ErrorTypeRequired, field.ErrorTypeDuplicate,
	field.ErrorTypeInvalid, field.ErrorTypeNotSupported, field.ErrorTypeForbidden, field.ErrorTypeTooLong,
	field.ErrorTypeTooMany, field.ErrorTypeInternal, field.ErrorTypeTypeInvalid, field.ErrorTypeTooShort,
	field.ErrorTypeTooFew)

// CauseError maps an API server cause on the object sent onto the admitted object's template: its field path
// gets prefix, and its message is kept as it is (with note appended). The cause's message already renders the
// bad value, so the error carries none of its own.
func CauseError(prefix *field.Path, c metav1.StatusCause, note string) *field.Error {
	typ := field.ErrorType(c.Type)
	detail := c.Message
	if fieldErrorTypes.Has(typ) {
		switch {
		case detail == typ.String():
			detail = ""
		case strings.HasPrefix(detail, typ.String()+": "):
			detail = strings.TrimPrefix(detail, typ.String()+": ")
		}
	} else {
		typ = field.ErrorTypeInvalid
	}
	switch {
	case note == "":
	case detail == "":
		detail = note
	default:
		detail += " (" + note + ")"
	}
	path := prefix.String()
	if c.Field != "" {
		path += "." + c.Field
	}
	return &field.Error{Type: typ, Field: path, BadValue: field.OmitValueType{}, Detail: detail}
}

// HasFieldPrefix reports whether the field path is prefix or a field below it.
func HasFieldPrefix(path, prefix string) bool {
	if !strings.HasPrefix(path, prefix) {
		return false
	}
	rest := path[len(prefix):]
	return rest == "" || rest[0] == '.' || rest[0] == '['
}
