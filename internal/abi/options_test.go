package abi

import (
	"reflect"
	"slices"
	"testing"
)

// TestOptionsNamesEveryField: every field of Attention set alone is one
// option, named as its JSON key; the zero value and a q_len of one query
// token are none. A field added to Attention shows here without a list
// to extend, so kernels that do not take it refuse it.
func TestOptionsNamesEveryField(t *testing.T) {
	if got := (Attention{}).Options(); len(got) != 0 {
		t.Errorf("plain attention: options %v", got)
	}
	if got := (Attention{QLen: 1}).Options(); len(got) != 0 {
		t.Errorf("q_len 1: options %v, want none (one query token is plain decode)", got)
	}
	typ := reflect.TypeOf(Attention{})
	for i := range typ.NumField() {
		var a Attention
		f := reflect.ValueOf(&a).Elem().Field(i)
		switch f.Kind() {
		case reflect.Float64:
			f.SetFloat(30)
		case reflect.Int:
			f.SetInt(4)
		case reflect.Bool:
			f.SetBool(true)
		case reflect.String:
			f.SetString("x")
		case reflect.Struct:
			f.Field(0).SetInt(512)
		default:
			t.Fatalf("field %s of kind %s: extend this test", typ.Field(i).Name, f.Kind())
		}
		got := a.Options()
		if len(got) != 1 || !slices.Contains([]string{"softcap", "alibi", "sinks", "window", "q_len", "mla", "lse"}, string(got[0])) {
			t.Errorf("%s set alone: options %v, want its one JSON name", typ.Field(i).Name, got)
		}
	}
	all := Attention{Softcap: 50, Sinks: true, QLen: 4}
	if got := all.Options(); !slices.Equal(got, []Option{"softcap", "sinks", "q_len"}) {
		t.Errorf("softcap, sinks, q_len 4: %v", got)
	}
}
