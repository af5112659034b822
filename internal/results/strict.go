package results

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
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

// strictCheck returns "" when line holds no key or null a writer could not
// have written, or what is wrong.
func strictCheck(line []byte) string { return StrictCheck(line, reflect.TypeFor[Record]()) }

// StrictCheck is strictCheck for a line of another layout ktune writes
// with encoding/json and reads back as evidence (the sanitizer's kept
// verdicts): "" when line, read as a t, holds no key or null its writer
// could not have written, or what is wrong.
func StrictCheck(line []byte, t reflect.Type) string {
	n, ok := schemas.Load(t)
	if !ok {
		n, _ = schemas.LoadOrStore(t, schemaOf(t))
	}
	msg, err := walkValue(line, n.(*schemaNode), "")
	if err != nil {
		return "malformed line: " + err.Error()
	}
	return msg
}

// walkValue checks one JSON value against n (nil: anything goes); path
// names the value in messages. Each object member and array element is
// taken whole (json.RawMessage) and walked on its own, so a null is seen as
// the value it is.
func walkValue(raw []byte, n *schemaNode, path string) (string, error) {
	if n == nil {
		return "", nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	tok, err := dec.Token()
	if err != nil {
		return "", err
	}
	d, ok := tok.(json.Delim)
	if !ok {
		return "", nil
	}
	switch {
	case d == '[' && n.elem != nil:
		for i := 0; dec.More(); i++ {
			var v json.RawMessage
			if err := dec.Decode(&v); err != nil {
				return "", err
			}
			if msg, err := walkValue(v, n.elem, fmt.Sprintf("%s[%d]", path, i)); msg != "" || err != nil {
				return msg, err
			}
		}
	case d == '{' && n.fields != nil:
		seen := map[string]string{} // lower-cased key -> the key as given
		for dec.More() {
			kt, err := dec.Token()
			if err != nil {
				return "", err
			}
			key, _ := kt.(string)
			at := strings.TrimPrefix(path+"."+key, ".")
			lower := strings.ToLower(key)
			if prev, dup := seen[lower]; dup {
				if prev == key {
					return fmt.Sprintf("key %q given twice", at), nil
				}
				return fmt.Sprintf("keys %q and %q differ only in case", prev, key), nil
			}
			seen[lower] = key
			var v json.RawMessage
			if err := dec.Decode(&v); err != nil {
				return "", err
			}
			f := n.fields[key]
			if exact, known := n.lowerKeys[lower]; f == nil && known {
				return fmt.Sprintf("key %q is spelt %q", at, exact), nil
			}
			if f == nil {
				continue
			}
			if f.omitempty && string(bytes.TrimSpace(v)) == "null" {
				return fmt.Sprintf("%s is null (a writer omits an empty field, never writes null)", at), nil
			}
			if msg, err := walkValue(v, f.node, at); msg != "" || err != nil {
				return msg, err
			}
		}
	}
	return "", nil
}
