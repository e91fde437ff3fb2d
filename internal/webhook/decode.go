package webhook

import (
	"bytes"
	"encoding"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

// maxDecodeErrors bounds the field errors one undecodable object reports.
const maxDecodeErrors = 100

// DecodeObject decodes the raw object of an admission request into into. Its status is never read: every kind
// drover serves has a status subresource, so the API server discards the status of a create or an update of
// the main resource, and a status the typed object cannot hold (`status: "x"`) must not fail admission.
//
// When the object does not decode, the result is one field error per value of the wrong type or form
// (a number where the API has a string, 1.5 for an integer, an unparsable quantity or time, ...), each with
// its field path, as the API server's schema check reports them. The object is decoded once in the common
// case; the slower walk that locates the errors runs only for an object that failed.
func DecodeObject(decoder admission.Decoder, raw runtime.RawExtension, into runtime.Object) field.ErrorList {
	err := decoder.DecodeRaw(raw, into)
	if err == nil {
		clearStatus(into)
		return nil
	}
	var doc map[string]any
	dec := json.NewDecoder(bytes.NewReader(raw.Raw))
	dec.UseNumber()
	if jsonErr := dec.Decode(&doc); jsonErr != nil {
		return field.ErrorList{field.Invalid(field.NewPath("metadata"), nil, "the object is not a JSON object: "+jsonErr.Error())}
	}
	delete(doc, "status")
	if stripped, mErr := json.Marshal(doc); mErr == nil {
		if err = decoder.DecodeRaw(runtime.RawExtension{Raw: stripped}, into); err == nil {
			clearStatus(into)
			return nil
		}
	}
	errs := locateDecodeErrors(doc, reflect.TypeOf(into), nil)
	if len(errs) == 0 {
		// Not expected: the walk mirrors the decoder. Say what the decoder said, without Go's type names.
		errs = field.ErrorList{field.Invalid(field.NewPath("spec"), nil, "the object does not decode: "+plainDecodeError(err))}
	}
	if len(errs) > maxDecodeErrors {
		errs = append(errs[:maxDecodeErrors], field.TooMany(field.NewPath("spec"), len(errs), maxDecodeErrors))
	}
	return errs
}

// clearStatus zeroes the Status field of a decoded object, if it has one.
func clearStatus(obj runtime.Object) {
	v := reflect.ValueOf(obj)
	if v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct {
		return
	}
	if f := v.Elem().FieldByName("Status"); f.IsValid() && f.CanSet() {
		f.Set(reflect.Zero(f.Type()))
	}
}

var (
	jsonUnmarshaler = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// locateDecodeErrors walks the JSON value v (decoded with UseNumber) beside the Go type t the way encoding/json
// decodes it (path is nil at the object's root: field.Path extends a nil path as a root), and returns a field error for every value that cannot be decoded, at its field path. Fields the
// type does not have are ignored (the decoder ignores them too; the API server prunes them).
func locateDecodeErrors(v any, t reflect.Type, path *field.Path) field.ErrorList {
	if v == nil {
		return nil // null decodes into anything
	}
	if t.Kind() != reflect.Pointer && reflect.PointerTo(t).Implements(jsonUnmarshaler) {
		return unmarshalerError(v, t, path)
	}
	if t.Kind() != reflect.Pointer && reflect.PointerTo(t).Implements(textUnmarshaler) {
		if s, ok := v.(string); ok {
			if err := reflect.New(t).Interface().(encoding.TextUnmarshaler).UnmarshalText([]byte(s)); err != nil {
				return field.ErrorList{field.Invalid(path, s, err.Error())}
			}
			return nil
		}
	}
	switch t.Kind() {
	case reflect.Pointer:
		return locateDecodeErrors(v, t.Elem(), path)
	case reflect.Struct:
		return structDecodeErrors(v, t, path)
	case reflect.Map:
		return mapDecodeErrors(v, t, path)
	case reflect.Slice, reflect.Array:
		return listDecodeErrors(v, t, path)
	case reflect.Interface:
		return nil
	default:
		if msg := scalarMismatch(v, t); msg != "" {
			return field.ErrorList{field.TypeInvalid(path, shortValue(v), msg)}
		}
		return nil
	}
}

// structDecodeErrors checks the members of a JSON object against the fields of struct type t, inlined and
// embedded structs included.
func structDecodeErrors(v any, t reflect.Type, path *field.Path) field.ErrorList {
	obj, ok := v.(map[string]any)
	if !ok {
		return field.ErrorList{field.TypeInvalid(path, shortValue(v), "must be an object")}
	}
	var errs field.ErrorList
	for i := range t.NumField() {
		f := t.Field(i)
		name, inline := jsonFieldName(f)
		switch {
		case inline:
			errs = append(errs, locateDecodeErrors(obj, f.Type, path)...)
		case name != "":
			if member, present := obj[name]; present {
				errs = append(errs, locateDecodeErrors(member, f.Type, path.Child(name))...)
			}
		}
	}
	return errs
}

// jsonFieldName returns the JSON name of a struct field, "" when encoding/json skips it, and whether its
// members are inlined (an embedded struct without a name, or a `json:",inline"` one).
func jsonFieldName(f reflect.StructField) (string, bool) {
	tag, hasTag := f.Tag.Lookup("json")
	name, opts, _ := strings.Cut(tag, ",")
	switch {
	case tag == "-":
		return "", false
	case name == "" && (f.Anonymous || strings.Contains(","+opts+",", ",inline,")):
		return "", true
	case !f.IsExported():
		return "", false
	case !hasTag || name == "":
		return f.Name, false
	default:
		return name, false
	}
}

func mapDecodeErrors(v any, t reflect.Type, path *field.Path) field.ErrorList {
	obj, ok := v.(map[string]any)
	if !ok {
		return field.ErrorList{field.TypeInvalid(path, shortValue(v), "must be an object")}
	}
	var errs field.ErrorList
	for _, k := range slices.Sorted(maps.Keys(obj)) {
		errs = append(errs, locateDecodeErrors(obj[k], t.Elem(), path.Key(k))...)
	}
	return errs
}

func listDecodeErrors(v any, t reflect.Type, path *field.Path) field.ErrorList {
	if t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.Uint8 { // []byte is base64 text
		s, ok := v.(string)
		if !ok {
			return field.ErrorList{field.TypeInvalid(path, shortValue(v), "must be a base64-encoded string")}
		}
		if _, err := base64.StdEncoding.DecodeString(s); err != nil {
			return field.ErrorList{field.Invalid(path, shortValue(v), "must be a base64-encoded string")}
		}
		return nil
	}
	list, ok := v.([]any)
	if !ok {
		return field.ErrorList{field.TypeInvalid(path, shortValue(v), "must be a list")}
	}
	var errs field.ErrorList
	for i, e := range list {
		errs = append(errs, locateDecodeErrors(e, t.Elem(), path.Index(i))...)
	}
	return errs
}

// scalarMismatch describes why v cannot be decoded into the scalar type t, or returns "".
func scalarMismatch(v any, t reflect.Type) string {
	switch t.Kind() {
	case reflect.String:
		if _, ok := v.(string); !ok {
			return "must be a string"
		}
	case reflect.Bool:
		if _, ok := v.(bool); !ok {
			return "must be a boolean"
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return intMismatch(v, t.Bits(), true)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return intMismatch(v, t.Bits(), false)
	case reflect.Float32, reflect.Float64:
		n, ok := v.(json.Number)
		if !ok {
			return "must be a number"
		}
		if _, err := strconv.ParseFloat(string(n), t.Bits()); err != nil {
			return "must be a number in range"
		}
	}
	return ""
}

// intMismatch describes why v is not an integer of the given size, or returns "".
func intMismatch(v any, bits int, signed bool) string {
	n, ok := v.(json.Number)
	if !ok {
		return "must be an integer"
	}
	var err error
	if signed {
		_, err = strconv.ParseInt(string(n), 10, bits)
	} else {
		_, err = strconv.ParseUint(string(n), 10, bits)
	}
	switch {
	case err == nil:
		return ""
	case strings.ContainsAny(string(n), ".eE"):
		return "must be an integer"
	case signed:
		return fmt.Sprintf("must be an integer from %d to %d", int64(math.MinInt64)>>(64-bits), int64(math.MaxInt64)>>(64-bits))
	default:
		return fmt.Sprintf("must be an integer from 0 to %d", uint64(math.MaxUint64)>>(64-bits))
	}
}

// unmarshalerError decodes v with the json.Unmarshaler of type t and reports its error with a message for
// the kinds of value Kubernetes APIs use.
func unmarshalerError(v any, t reflect.Type, path *field.Path) field.ErrorList {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	err = reflect.New(t).Interface().(json.Unmarshaler).UnmarshalJSON(raw)
	if err == nil {
		return nil
	}
	var msg string
	switch t {
	case reflect.TypeFor[resource.Quantity]():
		msg = "must be a quantity, such as 100m, 2, 1.5 or 64Mi"
	case reflect.TypeFor[metav1.Time](), reflect.TypeFor[metav1.MicroTime]():
		msg = "must be an RFC 3339 date and time, such as 2026-01-02T15:04:05Z"
	case reflect.TypeFor[intstr.IntOrString]():
		msg = "must be an integer or a string"
	case reflect.TypeFor[metav1.Duration]():
		msg = "must be a duration, such as 30s or 5m"
	default:
		msg = plainDecodeError(err)
	}
	return field.ErrorList{field.Invalid(path, shortValue(v), msg)}
}

// plainDecodeError returns the message of a decoding error without the Go type names the decoder adds.
func plainDecodeError(err error) string {
	msg := err.Error()
	if i := strings.Index(msg, " of type "); i >= 0 {
		msg = msg[:i]
	}
	return msg
}

// maxShownValueBytes bounds the bad value a decoding error repeats.
const maxShownValueBytes = 64

// shortValue returns v for an error message: scalars as they are (long strings cut), objects and lists as
// their JSON type only.
func shortValue(v any) any {
	switch x := v.(type) {
	case string:
		if len(x) > maxShownValueBytes {
			return x[:maxShownValueBytes] + "..."
		}
		return x
	case json.Number:
		return x
	case bool:
		return x
	default: // objects and lists
		return field.OmitValueType{}
	}
}
