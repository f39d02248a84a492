package config

import (
	"fmt"
	"reflect"
	"strings"
	"time"
)

// refKey is one key of the config file as the types define it.
type refKey struct {
	path     string // "pools[].max_runners"
	typeName string // in the words docs/config.md uses
	computed string // the default applyDefaults fills in, "" when none
}

// configKeys walks Config as the YAML decoder sees it: every key a file
// may set, in the order the types declare them. Defaults are read from a
// config whose every field applyDefaults could fill was left empty.
func configKeys() []refKey {
	defaults := Config{Pools: []Pool{{}}}
	defaults.applyDefaults()
	var keys []refKey
	walkKeys(reflect.TypeFor[Config](), reflect.ValueOf(defaults), "", &keys)
	return keys
}

func walkKeys(t reflect.Type, v reflect.Value, prefix string, keys *[]refKey) {
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if !f.IsExported() || name == "-" {
			continue
		}
		if name == "" {
			name = strings.ToLower(f.Name)
		}
		path := prefix + name
		ft, fv := f.Type, v.Field(i)
		switch {
		case ft.Kind() == reflect.Pointer && ft.Elem().Kind() == reflect.Struct:
			*keys = append(*keys, refKey{path: path, typeName: "mapping"})
			walkKeys(ft.Elem(), reflect.Zero(ft.Elem()), path+".", keys)
		case ft.Kind() == reflect.Struct && ft != durationType:
			walkKeys(ft, fv, path+".", keys)
		case ft.Kind() == reflect.Slice && ft.Elem().Kind() == reflect.Struct:
			*keys = append(*keys, refKey{path: path, typeName: "list of mappings"})
			elem := reflect.Zero(ft.Elem())
			if fv.Len() > 0 {
				elem = fv.Index(0)
			}
			walkKeys(ft.Elem(), elem, path+"[].", keys)
		default:
			*keys = append(*keys, refKey{path: path, typeName: typeWords(ft), computed: defaultWords(fv)})
		}
	}
}

// typeWords names a Go type as the file writes it.
func typeWords(t reflect.Type) string {
	switch {
	case t == durationType:
		return "duration"
	case t.Kind() == reflect.Bool:
		return "boolean"
	case isInt(t):
		return "integer"
	case t.Kind() == reflect.String:
		return "string"
	case t.Kind() == reflect.Float64:
		return "number"
	case t.Kind() == reflect.Slice:
		return "list of " + typeWords(t.Elem()) + "s"
	case t.Kind() == reflect.Map && t.Elem().Kind() == reflect.Interface:
		return "mapping"
	case t.Kind() == reflect.Map:
		return "mapping of " + typeWords(t.Key()) + " to " + typeWords(t.Elem())
	}
	panic(fmt.Sprintf("config reference: no words for %s", t))
}

// defaultWords is a defaulted value as one would write it in the file.
func defaultWords(v reflect.Value) string {
	if !v.IsValid() || v.IsZero() {
		return ""
	}
	if d, ok := v.Interface().(time.Duration); ok {
		return durationWords(d)
	}
	return fmt.Sprint(v.Interface())
}

// durationWords writes 30m as "30m", not Go's "30m0s".
func durationWords(d time.Duration) string {
	switch {
	case d%time.Hour == 0:
		return fmt.Sprintf("%dh", d/time.Hour)
	case d%time.Minute == 0:
		return fmt.Sprintf("%dm", d/time.Minute)
	}
	return d.String()
}
