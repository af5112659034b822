package plan

import (
	"fmt"
	"reflect"
	"sort"
	"strings"
	"testing"
)

// notHashed names every field of a Point (and of what it holds) that the
// point's hash leaves out on purpose, with the reason. A field that
// changes a measurement must be hashed (keys.go); TestEveryFieldHashed
// fails for any other field whose change leaves the hash as it was, so a
// new field is either hashed or listed here.
var notHashed = map[string]string{
	"Index":                     "the point's place in the plan, not what it measures",
	"Hash":                      "the output of the hash",
	"GateKey":                   "the output of the hash",
	"Landed":                    "marks the baseline for the reports; the measurement is the same",
	"Config.Spec":               "the spec's name, a label",
	"Config.Kernel":             "the kernel as written in the spec; its text and name are hashed (Source)",
	"Config.Splits":             "the SPLITS define, copied for tables; the define is hashed",
	"Config.Fixture":            "marks a record of a fault-isolation spec for the readers; the run is the same",
	"Source.Entries":            "the entries of the launches, each once; the launches are hashed",
	"Source.NameExprs":          "the entries of the launches as NVRTC name expressions; the launches are hashed",
	"Source.Artifact":           "the file's bytes; their SHA-256 is hashed (Source.ArtifactSHA256)",
	"Source.ArtifactKind":       "hashed with the artifact's digest, which is set exactly when it is",
	"Layouts":                   "a check of the declared structs against the kernel's C++ types, made by ktune check; the declarations themselves are hashed with the launches",
	"Source.EngineBuild":        "set with Source.BuildKey, which is hashed, or with Missing, whose points fail",
	"Source.LayoutProbe":        "the layout probe of a check, built from hashed inputs (Source.BuildKey, the launches' structs)",
	"Source.LayoutLog":          "the output of the layout probe's build, for a check",
	"Source.BuildInputs":        "a count of the files BuildKey hashes",
	"Source.BuildFailed":        "the outcome of a build whose inputs are hashed (Source.BuildKey)",
	"Source.BuildLog":           "the output of a build whose inputs are hashed (Source.BuildKey)",
	"Source.Symbols":            "the symbols of the launches' C++-named entries in the artifact: a function of its bytes and the entries, both hashed",
	"Geometry.Symbols":          "the values the grid expressions read other than nkv, each the shape's or a define's, which are hashed",
	"Twin":                      "the twin's own hash inputs, through its GateKey (Twin.GateKey)",
	"Invariance":                "the invariance gate's contexts: gates, not the measurement; named in the record's gate suite (gate.Suite) and the GateKey",
	"Launches[0].Args[0].Value": "a constant's literal, hashed in its text (abi.Arg.String); empty for a buffer or a scalar",

	"Launches[0].BlocksPerSMDeclared": "where Launches[].BlocksPerSM came from (the spec or --blocks-per-sm), for the messages; the value, which the probe checks, is hashed, so a launch that declares N and one planned with --blocks-per-sm N are one point",
}

// notHashedABI are the fields the hash of a point running the ABI's
// signature (isABI) leaves out: the ABI declares them once (signature.go)
// from what is hashed, so the hashes of the ABI kernels' records stay as
// they were before signatures were declared.
var notHashedABI = map[string]string{
	"Launches[0].Entry":             "the ABI's partial entry, hashed as Source.Partial",
	"Launches[0].Grid":              "hashed as Config.Grid",
	"Launches[0].Block":             "hashed as Config.Block",
	"Launches[0].Shared":            "hashed as Config.SharedBytes",
	"Launches":                      "the ABI's launches, a function of Source.Fused (one launch, or a combine after the partial)",
	"Launches[0].Args":              "the ABI's arguments, a function of Source.Fused and the shape's KV type",
	"Launches[0].Args[0].Name":      "the ABI's arguments, a function of Source.Fused and the shape's KV type",
	"Launches[0].Args[0].Struct":    "the ABI's arguments are no structs",
	"Launches[0].Args[0].Elems":     "the ABI's arguments are no vectors",
	"Launches[0].Args[0].TensorMap": "the ABI's arguments are no tensor maps",
	"Launches[0].Args[0].Type":      "the ABI's arguments, a function of Source.Fused and the shape's KV type",
	"Source.Named":                  "never set for the ABI's launches",
	"WorkspaceBytes":                "the ABI has no workspace",
	"Scratch":                       "the ABI has no scratch buffers",
	"Planned":                       "the ABI has no host-planned arrays",
	"PlannedBufs":                   "the ABI has no host-planned arrays",
	"IO.Q":                          "the ABI's io",
	"IO.Out":                        "the ABI's io",
	"IO.KVLayout":                   "the ABI's io",
	"IO.Partial":                    "the ABI's io",
	"IO.Workspace":                  "the ABI's io",
}

// TestEveryFieldHashed changes every field of a point, one at a time, and
// requires the hash to move unless the field is listed as not hashed: on
// an ABI point (mixed.yaml's td2, with a twin) and an engine's
// (engine.yaml's three-launch eng).
func TestEveryFieldHashed(t *testing.T) {
	abiPoint := build(t, "testdata/mixed.yaml").Points[8]
	engPoint := buildEngine(t, engineFiles).Points[0]
	if !isABI(abiPoint) || isABI(engPoint) || abiPoint.Twin == nil {
		t.Fatal("the bases are not an ABI point with a twin and an engine point")
	}
	for _, base := range []*Point{abiPoint, engPoint} {
		b := &builder{arch: "sm_90"}
		_, h0 := b.keys(base)
		var unhashed []string
		for _, path := range leafPaths(reflect.TypeOf(*base), "") {
			if _, ok := notHashed[path]; ok || strings.HasPrefix(path, "Twin.") {
				continue
			}
			if _, ok := notHashedABI[path]; ok && isABI(base) {
				continue
			}
			p := clonePoint(base)
			if !perturb(reflect.ValueOf(p).Elem(), path) {
				continue // an unexported field, or an empty slice of structs
			}
			if _, h := b.keys(p); h == h0 {
				unhashed = append(unhashed, path)
			}
		}
		sort.Strings(unhashed)
		for _, path := range unhashed {
			t.Errorf("%s: changing %s leaves the hash as it was: hash it in keys.go or list it in notHashed with why",
				base.Config.Variant, path)
		}
	}
	for path := range notHashed {
		if !hasPath(reflect.TypeOf(Point{}), path) {
			t.Errorf("notHashed lists %s, which Point has not", path)
		}
	}
}

// clonePoint deep-copies a point through its exported fields, the twin
// shallowly (only its GateKey is hashed).
func clonePoint(p *Point) *Point {
	c := reflect.New(reflect.TypeOf(*p)).Elem()
	deepCopy(c, reflect.ValueOf(*p))
	out := c.Addr().Interface().(*Point)
	out.arch = p.arch
	if p.Twin != nil {
		tw := *p.Twin
		out.Twin = &tw
	}
	return out
}

func deepCopy(dst, src reflect.Value) {
	switch src.Kind() {
	case reflect.Struct:
		for i := range src.NumField() {
			if dst.Field(i).CanSet() {
				deepCopy(dst.Field(i), src.Field(i))
			}
		}
	case reflect.Slice:
		if src.IsNil() {
			return
		}
		dst.Set(reflect.MakeSlice(src.Type(), src.Len(), src.Len()))
		for i := range src.Len() {
			deepCopy(dst.Index(i), src.Index(i))
		}
	case reflect.Map:
		if src.IsNil() {
			return
		}
		dst.Set(reflect.MakeMap(src.Type()))
		for _, k := range src.MapKeys() {
			dst.SetMapIndex(k, src.MapIndex(k))
		}
	case reflect.Pointer:
		if src.IsNil() {
			return
		}
		n := reflect.New(src.Type().Elem())
		deepCopy(n.Elem(), src.Elem())
		dst.Set(n)
	default:
		dst.Set(src)
	}
}

// leafPaths lists the paths of the exported leaves of a type: struct
// fields recursively, the first element of slices, the pointee of
// pointers (a pointer itself is a leaf too: nil or not).
func leafPaths(t reflect.Type, prefix string) []string {
	return leaves(t, prefix, map[reflect.Type]bool{})
}

// leaves is leafPaths that does not enter a type it is already inside
// (Point.Twin is a *Point): the pointer is then a leaf.
func leaves(t reflect.Type, prefix string, inside map[reflect.Type]bool) []string {
	if inside[t] {
		return []string{prefix}
	}
	switch t.Kind() {
	case reflect.Struct:
		inside[t] = true
		defer delete(inside, t)
		var out []string
		for i := range t.NumField() {
			f := t.Field(i)
			if !f.IsExported() {
				continue
			}
			name := f.Name
			if prefix != "" {
				name = prefix + "." + f.Name
			}
			out = append(out, leaves(f.Type, name, inside)...)
		}
		return out
	case reflect.Slice:
		if e := t.Elem(); e.Kind() == reflect.Struct {
			return append([]string{prefix}, leaves(e, prefix+"[0]", inside)...)
		}
	case reflect.Pointer:
		if e := t.Elem(); e.Kind() == reflect.Struct && !inside[e] {
			return append([]string{prefix}, leaves(e, prefix, inside)...)
		}
	}
	return []string{prefix}
}

// hasPath reports whether a path of notHashed names a field of t.
func hasPath(t reflect.Type, path string) bool {
	for _, p := range leafPaths(t, "") {
		if p == path || strings.HasPrefix(p, path+".") || strings.HasPrefix(p, path+"[") {
			return true
		}
	}
	return false
}

// perturb changes the leaf at path in v and reports whether it could.
func perturb(v reflect.Value, path string) bool {
	if path == "" {
		return change(v)
	}
	head, rest := path, ""
	if i := strings.IndexAny(path, ".["); i >= 0 {
		head, rest = path[:i], strings.TrimPrefix(path[i:], ".")
	}
	if head == "" && strings.HasPrefix(rest, "[0]") {
		if v.Kind() != reflect.Slice || v.Len() == 0 {
			return false
		}
		return perturb(v.Index(0), strings.TrimPrefix(strings.TrimPrefix(rest, "[0]"), "."))
	}
	for v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return false
		}
		v = v.Elem()
	}
	f := v.FieldByName(head)
	if !f.IsValid() || !f.CanSet() {
		return false
	}
	if strings.HasPrefix(rest, "[0]") {
		return perturb(f, rest)
	}
	return perturb(f, rest)
}

// change sets a leaf to another value of its type.
func change(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.String:
		v.SetString(v.String() + "x")
	case reflect.Bool:
		v.SetBool(!v.Bool())
	case reflect.Int, reflect.Int64, reflect.Int32:
		v.SetInt(v.Int() + 1)
	case reflect.Uint64, reflect.Uint32, reflect.Uint:
		v.SetUint(v.Uint() + 1)
	case reflect.Float64:
		v.SetFloat(v.Float()*2 + 1)
	case reflect.Array:
		return change(v.Index(0))
	case reflect.Slice:
		if v.Type().Elem().Kind() == reflect.Struct {
			if v.Len() == 0 {
				v.Set(reflect.Append(v, reflect.New(v.Type().Elem()).Elem())) // one element more
				return true
			}
			v.Set(v.Slice(0, v.Len()-1)) // one element fewer
			return true
		}
		e := reflect.New(v.Type().Elem()).Elem()
		if v.Len() > 0 {
			e.Set(v.Index(v.Len() - 1))
		}
		change(e)
		v.Set(reflect.Append(v, e))
	case reflect.Map:
		if v.IsNil() {
			v.Set(reflect.MakeMap(v.Type()))
		}
		k, e := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
		change(k)
		change(e)
		v.SetMapIndex(k, e)
	case reflect.Pointer:
		if v.IsNil() {
			v.Set(reflect.New(v.Type().Elem()))
		} else {
			v.Set(reflect.Zero(v.Type()))
		}
	default:
		panic(fmt.Sprintf("perturb: kind %s", v.Kind()))
	}
	return true
}
