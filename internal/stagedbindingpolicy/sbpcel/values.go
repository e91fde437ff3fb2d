package sbpcel

import (
	"fmt"
	"reflect"

	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/common/types/traits"
)

// jsonAdapter turns unstructured (JSON-shaped) Go values into CEL values lazily, without copying and
// without reflection: maps and lists are wrapped, and their elements converted on access.
type jsonAdapter struct {
	// intsAsDouble converts integers to double (the numbers of parsed JSON in the results variable).
	intsAsDouble bool
}

var (
	// storedAdapter keeps numbers as stored: integers int, others double.
	storedAdapter = &jsonAdapter{}
	// doubleAdapter makes every number a double.
	doubleAdapter = &jsonAdapter{intsAsDouble: true}
)

// NativeToValue implements types.Adapter.
func (a *jsonAdapter) NativeToValue(v any) ref.Val {
	switch x := v.(type) {
	case string:
		return types.String(x)
	case bool:
		return types.Bool(x)
	case int64:
		return a.integer(x)
	case int:
		return a.integer(int64(x))
	case int32:
		return a.integer(int64(x))
	case float64:
		return types.Double(x)
	case nil:
		return types.NullValue
	case map[string]any:
		return types.NewStringInterfaceMap(a, x)
	case []any:
		return &jsonList{adapter: a, elems: x}
	}
	return types.DefaultTypeAdapter.NativeToValue(v)
}

func (a *jsonAdapter) integer(i int64) ref.Val {
	if a.intsAsDouble {
		return types.Double(i)
	}
	return types.Int(i)
}

// jsonList is a CEL list over an unstructured []any. Hot paths (Get, Size, Iterator) are direct; the
// rest delegates to cel-go's generic list.
type jsonList struct {
	adapter *jsonAdapter
	elems   []any
}

var _ traits.Lister = (*jsonList)(nil)

func (l *jsonList) generic() traits.Lister { return types.NewDynamicList(l.adapter, l.elems) }

// Add implements traits.Adder.
func (l *jsonList) Add(other ref.Val) ref.Val { return l.generic().Add(other) }

// Contains implements traits.Container.
func (l *jsonList) Contains(v ref.Val) ref.Val { return l.generic().Contains(v) }

// ConvertToNative implements ref.Val.
func (l *jsonList) ConvertToNative(t reflect.Type) (any, error) {
	return l.generic().ConvertToNative(t)
}

// ConvertToType implements ref.Val.
func (l *jsonList) ConvertToType(t ref.Type) ref.Val {
	switch t {
	case types.ListType:
		return l
	case types.TypeType:
		return types.ListType
	}
	return l.generic().ConvertToType(t)
}

// Equal implements ref.Val.
func (l *jsonList) Equal(other ref.Val) ref.Val { return l.generic().Equal(other) }

// Type implements ref.Val.
func (l *jsonList) Type() ref.Type { return types.ListType }

// Value implements ref.Val.
func (l *jsonList) Value() any { return l.elems }

// Size implements traits.Sizer.
func (l *jsonList) Size() ref.Val { return types.Int(len(l.elems)) }

// Get implements traits.Indexer.
func (l *jsonList) Get(index ref.Val) ref.Val {
	i, err := types.IndexOrError(index)
	if err != nil {
		return types.ValOrErr(index, "%v", err)
	}
	if i < 0 || i >= len(l.elems) {
		return types.NewErr("index '%d' out of range in list size '%d'", i, len(l.elems))
	}
	return l.adapter.NativeToValue(l.elems[i])
}

// Iterator implements traits.Iterable.
func (l *jsonList) Iterator() traits.Iterator {
	return &iterator{size: len(l.elems), next: func(i int) ref.Val { return l.adapter.NativeToValue(l.elems[i]) }}
}

// columnIndex maps the column names of one collector result to positions in its rows.
type columnIndex struct {
	names []string
	pos   map[string]int
}

// rowMap is one row of the results variable: a CEL map(string, dyn) from column name to value. The
// column names are shared by all rows of a result; a nil value is an absent column.
type rowMap struct {
	cols *columnIndex
	vals []ref.Val
}

var _ traits.Mapper = (*rowMap)(nil)

// generic returns the row as a cel-go map, for the rarely used operations.
func (r *rowMap) generic() traits.Mapper {
	m := make(map[ref.Val]ref.Val, len(r.vals))
	for i, v := range r.vals {
		if v != nil {
			m[types.String(r.cols.names[i])] = v
		}
	}
	return types.NewRefValMap(types.DefaultTypeAdapter, m)
}

// Find implements traits.Mapper.
func (r *rowMap) Find(key ref.Val) (ref.Val, bool) {
	k, ok := key.(types.String)
	if !ok {
		return nil, false
	}
	i, ok := r.cols.pos[string(k)]
	if !ok || r.vals[i] == nil {
		return nil, false
	}
	return r.vals[i], true
}

// Get implements traits.Indexer.
func (r *rowMap) Get(key ref.Val) ref.Val {
	if v, ok := r.Find(key); ok {
		return v
	}
	return types.ValOrErr(key, "no such key: %v", key)
}

// Contains implements traits.Container.
func (r *rowMap) Contains(key ref.Val) ref.Val {
	_, ok := r.Find(key)
	return types.Bool(ok)
}

// Size implements traits.Sizer.
func (r *rowMap) Size() ref.Val {
	n := 0
	for _, v := range r.vals {
		if v != nil {
			n++
		}
	}
	return types.Int(n)
}

// Iterator implements traits.Iterable: the present column names, in column order.
func (r *rowMap) Iterator() traits.Iterator {
	keys := make([]ref.Val, 0, len(r.vals))
	for i, v := range r.vals {
		if v != nil {
			keys = append(keys, types.String(r.cols.names[i]))
		}
	}
	return &iterator{size: len(keys), next: func(i int) ref.Val { return keys[i] }}
}

// ConvertToNative implements ref.Val.
func (r *rowMap) ConvertToNative(t reflect.Type) (any, error) { return r.generic().ConvertToNative(t) }

// ConvertToType implements ref.Val.
func (r *rowMap) ConvertToType(t ref.Type) ref.Val {
	switch t {
	case types.MapType:
		return r
	case types.TypeType:
		return types.MapType
	}
	return r.generic().ConvertToType(t)
}

// Equal implements ref.Val.
func (r *rowMap) Equal(other ref.Val) ref.Val { return r.generic().Equal(other) }

// Type implements ref.Val.
func (r *rowMap) Type() ref.Type { return types.MapType }

// Value implements ref.Val.
func (r *rowMap) Value() any { return r.generic().Value() }

// iterator walks size elements produced by next.
type iterator struct {
	i, size int
	next    func(int) ref.Val
}

var _ traits.Iterator = (*iterator)(nil)

// HasNext implements traits.Iterator.
func (it *iterator) HasNext() ref.Val { return types.Bool(it.i < it.size) }

// Next implements traits.Iterator.
func (it *iterator) Next() ref.Val {
	if it.i >= it.size {
		return nil
	}
	v := it.next(it.i)
	it.i++
	return v
}

// ConvertToNative implements ref.Val.
func (it *iterator) ConvertToNative(t reflect.Type) (any, error) {
	return nil, fmt.Errorf("type conversion error from iterator to '%v'", t)
}

// ConvertToType implements ref.Val.
func (it *iterator) ConvertToType(ref.Type) ref.Val {
	return types.NewErr("type conversion on iterators not supported")
}

// Equal implements ref.Val.
func (it *iterator) Equal(ref.Val) ref.Val { return types.NoSuchOverloadErr() }

// Type implements ref.Val.
func (it *iterator) Type() ref.Type { return types.IteratorType }

// Value implements ref.Val.
func (it *iterator) Value() any { return nil }
