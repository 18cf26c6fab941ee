package reflecttest

import (
	"encoding/json"
	"fmt"
	"reflect"
	"testing"
	"time"
)

// Fill sets every exported field reachable from v (settable; json:"-"
// fields left alone) to a value that is not its zero value: strings with
// non-ASCII and HTML characters, numbers counted up from *n, pointers
// allocated, slices and maps of two, times with nanoseconds, a
// json.RawMessage an indented object. Interfaces stay nil.
func Fill(t testing.TB, v reflect.Value, n *int) {
	t.Helper()
	*n++
	switch v.Type() {
	case reflect.TypeFor[time.Time]():
		v.Set(reflect.ValueOf(time.Date(2026, 12, 6, 10, 0, *n, 123456789, time.UTC)))
		return
	case reflect.TypeFor[json.RawMessage]():
		v.SetBytes([]byte(fmt.Sprintf("{\n  \"n\": %d,\n  \"s\": \"\\u00e9\\n\"\n}", *n)))
		return
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString(fmt.Sprintf("s%d é <&>", *n))
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(int64(*n))
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(uint64(*n))
	case reflect.Float32, reflect.Float64:
		v.SetFloat(float64(*n) + 0.5)
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		Fill(t, v.Elem(), n)
	case reflect.Struct:
		for i := range v.NumField() {
			if f := v.Type().Field(i); f.IsExported() && f.Tag.Get("json") != "-" {
				Fill(t, v.Field(i), n)
			}
		}
	case reflect.Slice:
		v.Set(reflect.MakeSlice(v.Type(), 2, 2))
		for i := range 2 {
			Fill(t, v.Index(i), n)
		}
	case reflect.Map:
		v.Set(reflect.MakeMap(v.Type()))
		for range 2 {
			k, e := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
			Fill(t, k, n)
			Fill(t, e, n)
			v.SetMapIndex(k, e)
		}
	case reflect.Interface:
		// left nil: no field of the wire format is an interface today
	default:
		t.Fatalf("Fill: no value for a %s", v.Type())
	}
}
