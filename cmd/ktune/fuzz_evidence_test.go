package main

import (
	"encoding/json"
	"sort"
	"strings"
	"sync"
	"testing"
)

// metaState is the intact side of the property for one input, computed
// once per process.
type metaState struct {
	mi     metaInput
	in     input
	intact []int
	ok     map[string]bool
	nkvs   map[string][]int
}

var (
	metaOnce   sync.Once
	metaStates []*metaState
)

func loadMetaStates(t *testing.T) []*metaState {
	metaOnce.Do(func() {
		for _, mi := range metaInputs {
			in := loadInput(t, mi)
			metaStates = append(metaStates, &metaState{mi: mi, in: in, intact: intactExits(t, mi, in),
				ok: eligibleNoCap(t, in), nkvs: measuredNKV(in)})
		}
	})
	return metaStates
}

// editJSON makes one random edit at a node of r chosen by path: null it,
// delete or re-case its key, negate, zero or scale a number, flip a bool,
// or put a string in its place.
func editJSON(r jrec, path uint32, op uint8) {
	var parent any = r
	key := ""
	idx := -1
	var node any = r
	for {
		switch n := node.(type) {
		case jrec:
			if len(n) == 0 || path == 0 {
				goto edit
			}
			keys := make([]string, 0, len(n))
			for k := range n {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			k := keys[int(path)%len(keys)]
			path /= uint32(len(keys))
			parent, key, idx, node = n, k, -1, n[k]
		case []any:
			if len(n) == 0 || path == 0 {
				goto edit
			}
			i := int(path) % len(n)
			path /= uint32(len(n))
			parent, key, idx, node = n, "", i, n[i]
		default:
			goto edit
		}
	}
edit:
	set := func(v any) {
		switch p := parent.(type) {
		case jrec:
			if key != "" {
				p[key] = v
			}
		case []any:
			if idx >= 0 {
				p[idx] = v
			}
		}
	}
	switch op % 8 {
	case 0:
		set(nil)
	case 1:
		if p, ok := parent.(jrec); ok && key != "" {
			delete(p, key)
		}
	case 2:
		if p, ok := parent.(jrec); ok && key != "" {
			v := p[key]
			delete(p, key)
			p[strings.ToUpper(key)] = v
		}
	case 3, 4, 5:
		if x, ok := node.(json.Number); ok {
			f, _ := x.Float64()
			set([]float64{-f, 0, f * 10}[op%8-3])
		} else {
			set("x")
		}
	case 6:
		if b, ok := node.(bool); ok {
			set(!b)
		} else {
			set(true)
		}
	default:
		set("x")
	}
}

// FuzzNeverMorePermissive drives the metamorphic property with random
// edits: a catalogue mutation, or an edit anywhere in a record's JSON.
func FuzzNeverMorePermissive(f *testing.F) {
	f.Add(uint8(0), uint16(0), uint8(0), uint32(0), uint8(0))
	f.Add(uint8(0), uint16(51), uint8(200), uint32(12345), uint8(3))
	f.Add(uint8(1), uint16(3), uint8(7), uint32(0), uint8(1))
	f.Add(uint8(1), uint16(8), uint8(255), uint32(77), uint8(0))
	f.Fuzz(func(t *testing.T, which uint8, rec uint16, kind uint8, path uint32, arg uint8) {
		st := loadMetaStates(t)[int(which)%len(metaInputs)]
		mutant := st.in.clone()
		i := int(rec) % len(mutant[0])
		what := ""
		if int(kind) < len(catalogue) {
			m := catalogue[kind]
			mutant = m.apply(mutant, 0, i, int(arg))
			what = m.name
		} else {
			editJSON(mutant[0][i], path, arg)
			what = "edit"
		}
		checkMutant(t, st.mi, st.intact, st.ok, st.nkvs, st.in, mutant, st.mi.name+": "+what)
	})
}
