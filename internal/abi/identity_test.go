package abi

import (
	"reflect"
	"testing"
)

// TestIdentityCoversEveryField changes every field of a shape and of its
// attention options, one at a time, from a plain shape and from one with
// every option set, and requires the identity to change (and the hash
// text, which the point hash writes) unless the field is the label. A new
// field of Shape or Attention fails here until Identity (or Label) says it.
func TestIdentityCoversEveryField(t *testing.T) {
	plain := Shape{Name: "7b", Heads: 28, KVHeads: 4, HeadDim: 128, KVDtype: F16, Batch: 1, Capacity: 32768}
	full := plain
	full.KVDtype, full.KVScale = FP8E4M3, "head"
	full.Attention = Attention{Softcap: 30, ALiBi: ALiBiBuffer, Sinks: true, Window: 1024, QLen: 4,
		MLA: MLA{DV: 64, Layout: MLALatent}, LSE: LSENatural}
	fields := 0
	for _, base := range []Shape{plain, full} {
		for _, path := range leaves(reflect.TypeOf(base), nil) {
			s := base
			perturbField(t, reflect.ValueOf(&s).Elem().FieldByIndex(path))
			name := reflect.TypeOf(base).FieldByIndex(path).Name
			if name == "Name" {
				if s.Identity() != base.Identity() {
					t.Errorf("the label changes the identity: %q, %q", base.Identity(), s.Identity())
				}
				continue
			}
			fields++
			if s.Identity() == base.Identity() {
				t.Errorf("changing %s (%+v → %+v) leaves the identity %q", name, base, s, s.Identity())
			}
			if a, b := hashText(s), hashText(base); a == b {
				t.Errorf("changing %s leaves the hash text %q", name, a)
			}
		}
	}
	if fields < 2*14 {
		t.Fatalf("perturbed %d fields, want every field of Shape and Attention twice", fields)
	}
}

// hashText joins HashText's two parts.
func hashText(s Shape) string { a, b := s.HashText(); return a + "\x00" + b }

// leaves lists the index paths of the non-struct fields of t, recursively.
func leaves(t reflect.Type, prefix []int) [][]int {
	var out [][]int
	for i := range t.NumField() {
		p := append(append([]int(nil), prefix...), i)
		if f := t.Field(i); f.Type.Kind() == reflect.Struct {
			out = append(out, leaves(f.Type, p)...)
		} else {
			out = append(out, p)
		}
	}
	return out
}

// perturbField sets v to another valid value of its kind.
func perturbField(t *testing.T, v reflect.Value) {
	switch v.Kind() {
	case reflect.String:
		switch v.Interface().(type) {
		case Dtype:
			v.Set(reflect.ValueOf(map[Dtype]Dtype{F16: BF16}[v.Interface().(Dtype)]))
			if v.String() == "" {
				v.SetString(string(F16))
			}
		case ALiBi:
			v.SetString(map[string]string{"": "standard", "standard": "buffer", "buffer": "standard"}[v.String()])
		case MLALayout:
			v.SetString(map[string]string{"": "split", "latent": "split", "split": "latent"}[v.String()])
		case LSEBase:
			v.SetString(map[string]string{"": "log2", "ln": "log2", "log2": "ln"}[v.String()])
		default:
			v.SetString(v.String() + "x")
		}
	case reflect.Int:
		// q_len 0 and 1 are both one query: step by 2.
		v.SetInt(v.Int() + 2)
	case reflect.Float64:
		v.SetFloat(v.Float() + 20)
	case reflect.Bool:
		v.SetBool(!v.Bool())
	default:
		t.Fatalf("no perturbation for a field of kind %s", v.Kind())
	}
}
