package webhook

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

// Every error in one answer. An object with a value that does not decode (an unparsable duration, a string
// where the API has a number) cannot be validated as it is, yet the rest of it may hold errors too: a user
// would fix one error per apply. So the validating handler decodes the object once more without the values
// that failed (each removed at its field path), validates that, and answers with the decode errors and the
// validation errors together, leaving out what the validation says about the removed fields (their absence
// is not the user's mistake).

// decodeWithout decodes raw into the object with the values at paths removed, and reports whether that decoded.
func decodeWithout(decoder admission.Decoder, raw []byte, paths []string, into runtime.Object) bool {
	var doc map[string]any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if dec.Decode(&doc) != nil {
		return false
	}
	delete(doc, "status")
	for _, p := range paths {
		if !removeAt(doc, parsePath(p)) {
			return false
		}
	}
	stripped, err := json.Marshal(doc)
	if err != nil {
		return false
	}
	if decoder.DecodeRaw(runtime.RawExtension{Raw: stripped}, into) != nil {
		return false
	}
	clearStatus(into)
	return true
}

// parsePath splits a field path as field.Path renders it (spec.stages[1].minDuration,
// metadata.labels[app.kubernetes.io/name]) into its steps; a bracketed step is an index or a map key.
func parsePath(p string) []string {
	var steps []string
	for p != "" {
		switch p[0] {
		case '.':
			p = p[1:]
		case '[':
			end := strings.IndexByte(p, ']')
			if end < 0 {
				return append(steps, p)
			}
			steps = append(steps, p[1:end])
			p = p[end+1:]
		default:
			end := strings.IndexAny(p, ".[")
			if end < 0 {
				end = len(p)
			}
			steps = append(steps, p[:end])
			p = p[end:]
		}
	}
	return steps
}

// removeAt removes the value at steps from doc: a map entry is deleted, a list element becomes null (which
// decodes into anything, and keeps the indexes of the other paths). It reports whether the path led to a value.
func removeAt(doc any, steps []string) bool {
	if len(steps) == 0 {
		return false
	}
	for i, step := range steps {
		last := i == len(steps)-1
		switch node := doc.(type) {
		case map[string]any:
			if _, ok := node[step]; !ok {
				return false
			}
			if last {
				delete(node, step)
				return true
			}
			doc = node[step]
		case []any:
			idx, err := strconv.Atoi(step)
			if err != nil || idx < 0 || idx >= len(node) {
				return false
			}
			if last {
				node[idx] = nil
				return true
			}
			doc = node[idx]
		default:
			return false
		}
	}
	return false
}

// underAny reports whether the field path f is one of paths or lies under one of them.
func underAny(f string, paths []string) bool {
	for _, p := range paths {
		if f == p || strings.HasPrefix(f, p+".") || strings.HasPrefix(f, p+"[") {
			return true
		}
	}
	return false
}

// withValidation adds to the 422 of the decode errors the causes err (a validator's answer on the object
// without the undecodable values) holds about other fields.
func withValidation(decodeErr *apierrors.StatusError, err error, removed []string) *apierrors.StatusError {
	var apiStatus apierrors.APIStatus
	if err == nil || !errors.As(err, &apiStatus) || apiStatus.Status().Details == nil || decodeErr.ErrStatus.Details == nil {
		return decodeErr
	}
	status := decodeErr.ErrStatus
	details := *status.Details
	details.Causes = append([]metav1.StatusCause(nil), details.Causes...)
	n := len(details.Causes)
	for _, c := range apiStatus.Status().Details.Causes {
		if c.Field == "" || !underAny(c.Field, removed) {
			details.Causes = append(details.Causes, c)
		}
	}
	if len(details.Causes) == n {
		return decodeErr
	}
	all := make([]string, 0, len(details.Causes))
	for _, c := range details.Causes {
		all = append(all, c.Field+": "+c.Message)
	}
	status.Details = &details
	status.Message = fmt.Sprintf("%s %q is invalid: [%s]", schema.GroupKind{Group: details.Group, Kind: details.Kind}.String(),
		details.Name, strings.Join(all, ", "))
	return &apierrors.StatusError{ErrStatus: status}
}

// fieldsOf are the field paths of errs.
func fieldsOf(errs field.ErrorList) []string {
	out := make([]string, 0, len(errs))
	for _, e := range errs {
		out = append(out, e.Field)
	}
	return out
}
