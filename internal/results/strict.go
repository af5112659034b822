package results

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"time"
)

// encoding/json forgives what a results file must not: it matches keys
// case-insensitively and lets a later duplicate win, so `"status":
// "gate_failed", "Status": "ok"` reads as ok, and `"replayed": null` reads
// as a record nobody replayed. A verdict that trusts such a line passes on
// an edit. strictCheck walks the line once against the Record layout (and
// StrictCheck against another's) and calls damage what Append can never
// write:
//
//   - a key given twice in one object, or two keys that differ only in case;
//   - a key that is not the exact spelling of a field (a re-cased "Status"
//     would otherwise land in status);
//   - null for a field written with omitempty: the writer omits an empty
//     value, it never writes null, so a null there is an edit that would
//     erase the field (the replay mark above all).
//
// Keys this build does not know at all are left alone: a field an older
// build wrote and this one dropped is no damage.

// A schemaNode is the JSON layout of one Go type: the fields of a struct by
// their exact key, or the element of a slice or array.
type schemaNode struct {
	fields    map[string]*schemaField
	lowerKeys map[string]string // lower-cased key -> the exact key
	elem      *schemaNode
}

type schemaField struct {
	omitempty bool
	node      *schemaNode // nil for a leaf (number, string, bool, time)
}

// schemas caches each type's layout (a reflect.Type to its *schemaNode).
var schemas sync.Map

func schemaOf(t reflect.Type) *schemaNode {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == reflect.TypeFor[time.Time]() {
		return nil
	}
	switch t.Kind() {
	case reflect.Slice, reflect.Array:
		if e := schemaOf(t.Elem()); e != nil {
			return &schemaNode{elem: e}
		}
		return nil
	case reflect.Struct:
		n := &schemaNode{fields: map[string]*schemaField{}, lowerKeys: map[string]string{}}
		for i := range t.NumField() {
			f := t.Field(i)
			tag := f.Tag.Get("json")
			if !f.IsExported() || tag == "-" {
				continue
			}
			name, opts, _ := strings.Cut(tag, ",")
			if name == "" {
				name = f.Name
			}
			n.fields[name] = &schemaField{omitempty: strings.Contains(","+opts+",", ",omitempty,"), node: schemaOf(f.Type)}
			n.lowerKeys[strings.ToLower(name)] = name
		}
		return n
	}
	return nil
}

// strictCheck returns "" when line, valid JSON (encoding/json has just
// decoded it), holds no key or null a writer could not have written, or
// what is wrong. It walks the line without validating it again.
func strictCheck(line []byte) string {
	w := walker{b: line}
	return w.value(schemaFor(reflect.TypeFor[Record]()), "")
}

// schemaFor is t's layout, built once per type.
func schemaFor(t reflect.Type) *schemaNode {
	n, ok := schemas.Load(t)
	if !ok {
		n, _ = schemas.LoadOrStore(t, schemaOf(t))
	}
	return n.(*schemaNode)
}

// StrictCheck is strictCheck for a line of another layout ktune writes
// with encoding/json and reads back as evidence (the sanitizer's kept
// verdicts): "" when line, read as a t, holds no key or null its writer
// could not have written, or what is wrong.
func StrictCheck(line []byte, t reflect.Type) string {
	msg, err := walkValue(line, schemaFor(t), "")
	if err != nil {
		return "malformed line: " + err.Error()
	}
	return msg
}

// walkValue checks one JSON value against n (nil: anything goes); path
// names the value in messages. It reads the line once, byte by byte, after
// json.Valid has vouched for its syntax: the structure the schema knows
// member by member, every other value (a leaf, samples, a key this build
// does not know) skipped whole, so a null is seen as the value it is.
func walkValue(raw []byte, n *schemaNode, path string) (string, error) {
	if n == nil {
		return "", nil
	}
	if !json.Valid(raw) {
		var v any
		err := json.Unmarshal(raw, &v)
		if err == nil {
			err = errors.New("invalid JSON")
		}
		return "", err
	}
	w := walker{b: raw}
	return w.value(n, path), nil
}

// A walker reads valid JSON from b at i.
type walker struct {
	b []byte
	i int
}

func (w *walker) ws() {
	for w.i < len(w.b) && (w.b[w.i] == ' ' || w.b[w.i] == '\t' || w.b[w.i] == '\n' || w.b[w.i] == '\r') {
		w.i++
	}
}

// peek returns the next byte after white space.
func (w *walker) peek() byte {
	w.ws()
	return w.b[w.i]
}

// str reads a string and returns its value.
func (w *walker) str() string {
	start := w.i
	w.i++ // the opening quote
	escaped := false
	for w.b[w.i] != '"' {
		if w.b[w.i] == '\\' {
			escaped = true
			w.i++
		}
		w.i++
	}
	w.i++
	if !escaped {
		return string(w.b[start+1 : w.i-1])
	}
	var s string
	_ = json.Unmarshal(w.b[start:w.i], &s) // valid: json.Valid said so
	return s
}

// skip reads past one value.
func (w *walker) skip() {
	switch w.peek() {
	case '"':
		w.str()
	case '{', '[':
		for depth := 0; ; {
			switch c := w.b[w.i]; c {
			case '"':
				w.str()
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
			}
			w.i++
			if depth == 0 {
				return
			}
		}
	default: // a number, true, false, null
		for w.i < len(w.b) && !strings.ContainsRune(",}] \t\r\n", rune(w.b[w.i])) {
			w.i++
		}
	}
}

// isNull reports whether the next value is the literal null.
func (w *walker) isNull() bool {
	return w.peek() == 'n'
}

// value checks the next value against n and reads past it.
func (w *walker) value(n *schemaNode, path string) string {
	c := w.peek()
	switch {
	case n == nil:
	case c == '[' && n.elem != nil:
		w.i++
		for i := 0; w.peek() != ']'; i++ {
			if i > 0 {
				w.i++ // the comma
			}
			if c := w.peek(); c == '{' || c == '[' {
				if msg := w.value(n.elem, path+"["+strconv.Itoa(i)+"]"); msg != "" {
					return msg
				}
			} else {
				w.skip()
			}
		}
		w.i++
		return ""
	case c == '{' && n.fields != nil:
		w.i++
		seen := map[string]string{} // lower-cased key -> the key as given
		for first := true; w.peek() != '}'; first = false {
			if !first {
				w.i++ // the comma
				w.ws()
			}
			key := w.str()
			w.ws()
			w.i++ // the colon
			// The member's path, built only for a message or a nested
			// layout: most members are leaves that pass.
			at := func() string { return strings.TrimPrefix(path+"."+key, ".") }
			lower := strings.ToLower(key)
			if prev, dup := seen[lower]; dup {
				if prev == key {
					return fmt.Sprintf("key %q given twice", at())
				}
				return fmt.Sprintf("keys %q and %q differ only in case", prev, key)
			}
			seen[lower] = key
			f := n.fields[key]
			if exact, known := n.lowerKeys[lower]; f == nil && known {
				return fmt.Sprintf("key %q is spelt %q", at(), exact)
			}
			switch {
			case f == nil, f.node == nil && !f.omitempty:
				w.skip()
			case f.omitempty && w.isNull():
				return fmt.Sprintf("%s is null (a writer omits an empty field, never writes null)", at())
			case f.node == nil:
				w.skip()
			default:
				if msg := w.value(f.node, at()); msg != "" {
					return msg
				}
			}
		}
		w.i++
		return ""
	}
	w.skip()
	return ""
}
