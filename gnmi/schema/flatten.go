package schema

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"sync"

	"github.com/openconfig/gnmi/proto/gnmi"
	"github.com/openconfig/ygot/ygot"
)

// flatten walks a GoStruct of the uncompressed generated code and calls fn
// for every set leaf with its data path and PROTO value. It does what
// ygot.TogNMINotifications does for this schema, several times faster: the
// state publisher flattens the whole state tree after every Set and every
// interval, and the Set latency budget is a few milliseconds. Struct field
// layouts are computed once per type.
func flatten(v reflect.Value, elems []*gnmi.PathElem, fn func(p *gnmi.Path, tv *gnmi.TypedValue)) error {
	if v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return nil
		}
		v = v.Elem()
	}
	for _, f := range fieldsOf(v.Type()) {
		fv := v.Field(f.index)
		switch f.kind {
		case fieldContainer:
			if fv.IsNil() {
				continue
			}
			if err := flatten(fv, appendElem(elems, &gnmi.PathElem{Name: f.name}), fn); err != nil {
				return err
			}
		case fieldList:
			iter := fv.MapRange()
			for iter.Next() {
				keys, err := listKeys(iter.Key(), f.keyNames)
				if err != nil {
					return fmt.Errorf("%s: %w", f.name, err)
				}
				if err := flatten(iter.Value(), appendElem(elems, &gnmi.PathElem{Name: f.name, Key: keys}), fn); err != nil {
					return err
				}
			}
		case fieldLeaf:
			tv, err := leafValue(fv)
			if err != nil {
				return fmt.Errorf("%s: %w", f.name, err)
			}
			if tv == nil {
				continue
			}
			p := &gnmi.Path{Elem: appendElem(elems, &gnmi.PathElem{Name: f.name})}
			fn(p, tv)
		}
	}
	return nil
}

// appendElem returns elems + e in a new slice (paths handed out must not
// share a backing array).
func appendElem(elems []*gnmi.PathElem, e *gnmi.PathElem) []*gnmi.PathElem {
	out := make([]*gnmi.PathElem, len(elems)+1)
	copy(out, elems)
	out[len(elems)] = e
	return out
}

type fieldKind uint8

const (
	fieldLeaf fieldKind = iota
	fieldContainer
	fieldList
)

type fieldInfo struct {
	index    int
	name     string
	kind     fieldKind
	keyNames []string // single-key lists: the key's name (from the element's key field)
}

var fieldCache sync.Map // reflect.Type → []fieldInfo

func fieldsOf(t reflect.Type) []fieldInfo {
	if fs, ok := fieldCache.Load(t); ok {
		return fs.([]fieldInfo)
	}
	var fs []fieldInfo
	for i := 0; i < t.NumField(); i++ {
		sf := t.Field(i)
		tag, ok := sf.Tag.Lookup("path")
		if !ok || !sf.IsExported() {
			continue
		}
		// Uncompressed code: one element per field; the first of
		// "a|b" alternatives is the data path.
		name := strings.Split(tag, "|")[0]
		name = name[strings.LastIndexByte(name, '/')+1:]
		fi := fieldInfo{index: i, name: name}
		switch {
		case sf.Type.Kind() == reflect.Map:
			fi.kind = fieldList
			fi.keyNames = singleKeyName(sf.Type)
		case sf.Type.Kind() == reflect.Pointer && sf.Type.Elem().Kind() == reflect.Struct && sf.Type.Implements(goStructType):
			fi.kind = fieldContainer
		default:
			fi.kind = fieldLeaf
		}
		fs = append(fs, fi)
	}
	fieldCache.Store(t, fs)
	return fs
}

var goStructType = reflect.TypeOf((*ygot.GoStruct)(nil)).Elem()

// singleKeyName finds the key leaf of a list with a scalar map key: the
// element's field whose Go type matches the key and whose tag is a direct
// child (the generated code names it after the key).
func singleKeyName(mt reflect.Type) []string {
	kt := mt.Key()
	if kt.Kind() == reflect.Struct {
		return nil
	}
	et := mt.Elem().Elem()
	for i := 0; i < et.NumField(); i++ {
		sf := et.Field(i)
		if sf.Type.Kind() == reflect.Pointer && sf.Type.Elem() == kt {
			if tag, ok := sf.Tag.Lookup("path"); ok && !strings.Contains(tag, "/") {
				return []string{tag}
			}
		}
	}
	return nil
}

func listKeys(k reflect.Value, names []string) (map[string]string, error) {
	if k.Kind() != reflect.Struct {
		if len(names) != 1 {
			return nil, fmt.Errorf("no key name for %v", k.Type())
		}
		s, err := scalarString(k)
		if err != nil {
			return nil, err
		}
		return map[string]string{names[0]: s}, nil
	}
	out := map[string]string{}
	t := k.Type()
	for i := 0; i < t.NumField(); i++ {
		tag, ok := t.Field(i).Tag.Lookup("path")
		if !ok {
			continue
		}
		s, err := scalarString(k.Field(i))
		if err != nil {
			return nil, err
		}
		out[tag] = s
	}
	return out, nil
}

func scalarString(v reflect.Value) (string, error) {
	switch v.Kind() {
	case reflect.String:
		return v.String(), nil
	case reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return strconv.FormatUint(v.Uint(), 10), nil
	case reflect.Int8, reflect.Int16, reflect.Int32:
		return strconv.FormatInt(v.Int(), 10), nil
	case reflect.Int64:
		if e, ok := v.Interface().(ygot.GoEnum); ok {
			return ygot.EnumName(e)
		}
		return strconv.FormatInt(v.Int(), 10), nil
	case reflect.Bool:
		return strconv.FormatBool(v.Bool()), nil
	}
	return "", fmt.Errorf("key of kind %v", v.Kind())
}

// leafValue encodes a leaf field as ygot would (nil when unset).
func leafValue(v reflect.Value) (*gnmi.TypedValue, error) {
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			return nil, nil
		}
		e := v.Elem()
		switch e.Kind() {
		case reflect.Bool:
			return &gnmi.TypedValue{Value: &gnmi.TypedValue_BoolVal{BoolVal: e.Bool()}}, nil
		case reflect.String:
			return &gnmi.TypedValue{Value: &gnmi.TypedValue_StringVal{StringVal: e.String()}}, nil
		case reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
			return &gnmi.TypedValue{Value: &gnmi.TypedValue_UintVal{UintVal: e.Uint()}}, nil
		case reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
			return &gnmi.TypedValue{Value: &gnmi.TypedValue_IntVal{IntVal: e.Int()}}, nil
		case reflect.Float64:
			return &gnmi.TypedValue{Value: &gnmi.TypedValue_DoubleVal{DoubleVal: e.Float()}}, nil
		}
	case reflect.Int64:
		if en, ok := v.Interface().(ygot.GoEnum); ok {
			if v.Int() == 0 { // UNSET
				return nil, nil
			}
			name, err := ygot.EnumName(en)
			if err != nil {
				return nil, err
			}
			return &gnmi.TypedValue{Value: &gnmi.TypedValue_StringVal{StringVal: name}}, nil
		}
	}
	if v.IsZero() {
		return nil, nil
	}
	return ygot.EncodeTypedValue(v.Interface(), gnmi.Encoding_PROTO)
}
