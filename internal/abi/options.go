package abi

import (
	"reflect"
	"strings"
)

// An Option names one attention option of a shape as a spec and a record
// write it (the field's JSON name: "softcap", "q_len", …).
type Option string

// Options lists the options a sets, in the order of Attention's fields:
// every field that is not at its zero value (q_len only above one query
// token). It reads the struct itself, so a field added to Attention is an
// option here, and so refused by every kernel that does not say it
// computes it (catalog.Kernel.Takes), with no list to keep in step.
func (a Attention) Options() []Option {
	var out []Option
	v, t := reflect.ValueOf(a), reflect.TypeOf(a)
	for i := range t.NumField() {
		f := v.Field(i)
		if f.IsZero() {
			continue
		}
		name := Option(strings.Split(t.Field(i).Tag.Get("json"), ",")[0])
		if name == "q_len" && a.Queries() == 1 {
			continue
		}
		out = append(out, name)
	}
	return out
}
