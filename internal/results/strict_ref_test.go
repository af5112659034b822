package results

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"strings"
	"testing"
)

// walkValueRef is the strict check as first written: every member and
// element taken whole (json.RawMessage) and walked again on a decoder of
// its own. It reads each nested byte once per level, which made reading
// results files most of the CPU of ktune's report and gate; walkValue reads
// the line once. The two must agree on every line.
func walkValueRef(raw []byte, n *schemaNode, path string) (string, error) {
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
			if msg, err := walkValueRef(v, n.elem, fmt.Sprintf("%s[%d]", path, i)); msg != "" || err != nil {
				return msg, err
			}
		}
	case d == '{' && n.fields != nil:
		seen := map[string]string{}
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
			if msg, err := walkValueRef(v, f.node, at); msg != "" || err != nil {
				return msg, err
			}
		}
	}
	return "", nil
}

// strictAgree fails t when walkValue and walkValueRef read a valid JSON
// line differently.
func strictAgree(t *testing.T, line []byte) {
	t.Helper()
	if !json.Valid(line) {
		return // the reader refuses it before the strict check
	}
	n := schemaOf(reflect.TypeFor[Record]())
	got, gerr := walkValue(line, n, "")
	want, werr := walkValueRef(line, n, "")
	if got != want || (gerr == nil) != (werr == nil) {
		t.Fatalf("walkValue = %q, %v; the reference says %q, %v\nline: %.300s", got, gerr, want, werr, line)
	}
}

// strictEdits are the edits TestStrictDecodingRefusesEdits makes, and more
// at other depths: each must read the same both ways.
var strictEdits = [][2]string{
	{`"status":`, `"status":"ok","status":`},
	{`"status":`, `"Status":"ok","status":`},
	{`"status":`, `"STATUS":`},
	{`"kind":`, `"pass":true,"kind":`},
	{`"samples_ns"`, `"Samples_NS"`},
	{`"samples_ns":[`, `"samples_ns":null,"x":[`},
	{`"replayed":{`, `"replayed":null,"y":{`},
	{`"config":{`, `"config":[1,{"a":null}],"z":{`},
	{`"gates":[`, `"gates":[null,7,"s",[],`},
	{`"env":{`, `"env":{"device":null,`},
	{`"probes":[`, `"probes":{"a":[{}]},"w":[`},
}

// TestStrictWalkAgreesWithReference: on every line of the committed
// results files, intact and under each edit, the one-pass walk says what
// the reference says.
func TestStrictWalkAgreesWithReference(t *testing.T) {
	paths := []string{"../../experiments/results/h200/slice.jsonl", "../../experiments/results/h200/faults.jsonl", "../../experiments/results/h200/rerun.jsonl"}
	lines := 0
	for _, p := range paths {
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(nil, MaxLineBytes)
		for sc.Scan() {
			line := sc.Bytes()
			lines++
			strictAgree(t, line)
			for _, e := range strictEdits {
				if bytes.Contains(line, []byte(e[0])) {
					strictAgree(t, bytes.Replace(line, []byte(e[0]), []byte(e[1]), 1))
				}
			}
		}
		f.Close()
		if err := sc.Err(); err != nil {
			t.Fatal(err)
		}
	}
	if lines < 50 {
		t.Fatalf("read %d lines; the committed results moved?", lines)
	}
}

// FuzzStrictWalk: on any valid JSON line the two walks agree.
func FuzzStrictWalk(f *testing.F) {
	rec := fullRecord("00112233aabbccdd")
	b, _ := json.Marshal(&rec)
	f.Add(b)
	for _, e := range strictEdits {
		f.Add(bytes.Replace(b, []byte(e[0]), []byte(e[1]), 1))
	}
	f.Fuzz(func(t *testing.T, line []byte) { strictAgree(t, line) })
}
