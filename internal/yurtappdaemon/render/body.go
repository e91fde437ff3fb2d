package render

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
)

// toJSONMap converts a typed API struct (or a pointer to one) to the JSON object an apply body holds.
// It follows encoding/json (tags, omitempty, inline structs, custom marshalers) with two
// differences: null values are left out, and a non-pointer struct field that encodes to {} is left out,
// because it is what the template leaves unset (strategy: {}, resources: {}, metadata: {}). A pointer to an
// empty struct is kept (emptyDir: {} means something). Numbers are int64 or float64, as in unstructured.
func toJSONMap(v any) (map[string]any, error) {
	out, _, err := walk(reflect.ValueOf(v))
	if err != nil {
		return nil, err
	}
	m, ok := out.(map[string]any)
	if !ok {
		return map[string]any{}, nil
	}
	return m, nil
}

var marshalerType = reflect.TypeFor[json.Marshaler]()

// walk returns the JSON value of v and false when v encodes to null.
func walk(v reflect.Value) (any, bool, error) {
	if !v.IsValid() {
		return nil, false, nil
	}
	if v.Kind() != reflect.Pointer && v.Kind() != reflect.Interface {
		if v.Type().Implements(marshalerType) {
			return marshaled(v)
		}
		if v.CanAddr() && reflect.PointerTo(v.Type()).Implements(marshalerType) {
			return marshaled(v.Addr())
		}
	}
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return nil, false, nil
		}
		return walk(v.Elem())
	case reflect.Struct:
		m := map[string]any{}
		if err := walkStruct(v, m); err != nil {
			return nil, false, err
		}
		return m, true, nil
	case reflect.Map:
		return walkMap(v)
	case reflect.Slice, reflect.Array:
		return walkSlice(v)
	default:
		return scalar(v)
	}
}

// marshaled encodes v with its own MarshalJSON and decodes the result.
func marshaled(v reflect.Value) (any, bool, error) {
	data, err := json.Marshal(v.Interface())
	if err != nil {
		return nil, false, fmt.Errorf("encoding %s: %w", v.Type(), err)
	}
	out, err := decodeJSON(data)
	if err != nil {
		return nil, false, err
	}
	return out, out != nil, nil
}

func walkStruct(v reflect.Value, m map[string]any) error {
	t := v.Type()
	for i := range t.NumField() {
		f := t.Field(i)
		name, omitEmpty, inline, skip := jsonField(f)
		if skip {
			continue
		}
		fv := v.Field(i)
		if inline {
			if fv.Kind() == reflect.Pointer {
				if fv.IsNil() {
					continue
				}
				fv = fv.Elem()
			}
			if fv.Kind() == reflect.Struct {
				if err := walkStruct(fv, m); err != nil {
					return err
				}
				continue
			}
		}
		if omitEmpty && isEmptyValue(fv) {
			continue
		}
		out, ok, err := walk(fv)
		if err != nil {
			return err
		}
		if !ok {
			continue
		}
		if sub, isMap := out.(map[string]any); isMap && len(sub) == 0 && fv.Kind() == reflect.Struct {
			continue // a zero-valued struct the template leaves unset
		}
		m[name] = out
	}
	return nil
}

// jsonField reads a struct field's json tag the way encoding/json does.
func jsonField(f reflect.StructField) (name string, omitEmpty, inline, skip bool) {
	tag := f.Tag.Get("json")
	if tag == "-" || (!f.IsExported() && !f.Anonymous) {
		return "", false, false, true
	}
	name, opts, _ := strings.Cut(tag, ",")
	for o := range strings.SplitSeq(opts, ",") {
		switch o {
		case "omitempty":
			omitEmpty = true
		case "inline":
			inline = true
		}
	}
	if f.Anonymous && name == "" {
		inline = true
	}
	if !inline && !f.IsExported() {
		return "", false, false, true
	}
	if name == "" {
		name = f.Name
	}
	return name, omitEmpty, inline, false
}

// isEmptyValue is encoding/json's omitempty test.
func isEmptyValue(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Array, reflect.Map, reflect.Slice, reflect.String:
		return v.Len() == 0
	case reflect.Bool:
		return !v.Bool()
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return v.Int() == 0
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return v.Uint() == 0
	case reflect.Float32, reflect.Float64:
		return v.Float() == 0
	case reflect.Interface, reflect.Pointer:
		return v.IsNil()
	default:
		return false
	}
}

func walkMap(v reflect.Value) (any, bool, error) {
	if v.IsNil() || v.Len() == 0 {
		return nil, false, nil
	}
	if v.Type().Key().Kind() != reflect.String {
		return marshaled(v)
	}
	m := make(map[string]any, v.Len())
	iter := v.MapRange()
	for iter.Next() {
		out, ok, err := walk(iter.Value())
		if err != nil {
			return nil, false, err
		}
		if ok {
			m[iter.Key().String()] = out
		}
	}
	return m, true, nil
}

func walkSlice(v reflect.Value) (any, bool, error) {
	if v.Kind() == reflect.Slice && v.IsNil() {
		return nil, false, nil
	}
	if v.Type().Elem().Kind() == reflect.Uint8 {
		return marshaled(v) // []byte is base64 in JSON
	}
	out := make([]any, v.Len())
	for i := range v.Len() {
		item, _, err := walk(v.Index(i))
		if err != nil {
			return nil, false, err
		}
		out[i] = item
	}
	return out, true, nil
}

func scalar(v reflect.Value) (any, bool, error) {
	switch v.Kind() {
	case reflect.String:
		return v.String(), true, nil
	case reflect.Bool:
		return v.Bool(), true, nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return v.Int(), true, nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return int64(v.Uint()), true, nil
	case reflect.Float32, reflect.Float64:
		return v.Float(), true, nil
	default:
		return marshaled(v)
	}
}

// decodeJSON decodes data into unstructured values: integers become int64, other numbers float64.
func decodeJSON(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var out any
	if err := dec.Decode(&out); err != nil {
		return nil, fmt.Errorf("decoding JSON: %w", err)
	}
	return numbers(out), nil
}

func numbers(v any) any {
	switch x := v.(type) {
	case json.Number:
		if i, err := x.Int64(); err == nil {
			return i
		}
		f, _ := x.Float64()
		return f
	case map[string]any:
		for k, e := range x {
			x[k] = numbers(e)
		}
		return x
	case []any:
		for i, e := range x {
			x[i] = numbers(e)
		}
		return x
	default:
		return v
	}
}
