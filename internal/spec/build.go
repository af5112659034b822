package spec

import (
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"
)

// An engine's own build. A variant may declare the command its engine
// builds the kernel with (nvcc with the wheel's flags, a script) instead
// of having NVRTC compile it:
//
//	kernel: ${VLLM_ROOT}/csrc/attention/paged_attention_v2.cu
//	build:
//	  command: [nvcc, -cubin, "-arch={arch}", -O3, -MD, -MF, "{dep}", -o, "{out}", "${VLLM_ROOT}/csrc/attention/paged_attention_v2.cu"]
//	  artifact: cubin
//
// The plan runs it where it may (plan/build.go): {out} is the artifact's
// path in ktune's build cache, {dep} a make-style dependency file the
// command writes (every file it names is hashed with the point), {arch}
// the architecture, and {EXPR} an expression over the point's values (an
// axis forwarded by name). The variant's kernel is then the build's main
// source: it names the kernel in reports and is hashed.
//
// ${NAME} in a kernel path, an include directory or a build token is the
// environment variable NAME, the root of an engine's tree given on the
// command line (VLLM_ROOT=/src/vllm ktune check spec.yaml), so committed
// specs hold no machine's paths.

// A Build is a variant's build command.
type Build struct {
	// Command is the argv, its placeholders unexpanded.
	Command []string
	// Artifact is what {out} holds: ArtifactCUBIN (the default),
	// ArtifactFatbin or ArtifactPTX.
	Artifact string
	Pos      Pos
}

var buildKeys = []string{"command", "artifact"}

// envRef is ${NAME}.
var envRef = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)\}`)

// expandEnv replaces every ${NAME} of s by the environment's NAME; an
// unset one is an error at n.
func (d *decoder) expandEnv(s string, n *yaml.Node, where string) string {
	return envRef.ReplaceAllStringFunc(s, func(m string) string {
		name := m[2 : len(m)-1]
		v, ok := os.LookupEnv(name)
		if !ok || v == "" {
			d.errorf(n, "%s: %s is not set: give the engine's tree on the command line (%s=/path/to/tree ktune …)", where, m, name)
			return m
		}
		return v
	})
}

func (d *decoder) build(n *yaml.Node, where string) *Build {
	b := &Build{Artifact: ArtifactCUBIN, Pos: pos(n)}
	seen := d.fields(n, where, buildKeys, func(key string, _, v *yaml.Node) {
		k := where + "." + key
		switch key {
		case "command":
			l, ok := d.list(v, k, true)
			if !ok {
				return
			}
			for _, t := range l {
				b.Command = append(b.Command, d.expandEnv(d.str(t, k), t, k))
			}
			switch {
			case len(b.Command) == 0:
				d.errorf(v, "%s: empty: want the command's argv", k)
			case !slices.ContainsFunc(b.Command, func(t string) bool { return strings.Contains(t, "{out}") }):
				d.errorf(v, "%s: no token names {out}, the artifact's path the command writes", k)
			}
		case "artifact":
			switch a := d.str(v, k); a {
			case ArtifactCUBIN, ArtifactFatbin, ArtifactPTX:
				b.Artifact = a
			default:
				d.errorf(v, "%s: want cubin, fatbin or ptx, got %q", k, a)
			}
		}
	})
	if deref(n).Kind == yaml.MappingNode {
		d.require(n, where, seen, "command")
	}
	return b
}

// buildPlaceholders are the {…} a build token may hold besides
// expressions.
var buildPlaceholders = []string{"out", "dep", "arch", "host", "instantiate"}

// buildExprs checks a build's {EXPR} placeholders once the axes are
// known, and that the variant's kernel is a source the build reads.
func (d *decoder) buildExprs(s *Spec, i int, w *where) {
	v, vn := &s.Variants[i], w.variants[i]
	if len(v.HostHeaders) > 0 && (v.Builtin != nil || len(v.Dispatch) > 0 || artifactKind(v.Path) != "") {
		d.errorf(vn.hostHeaders, "variants[%d] (%s).host_headers: only an engine's source compiled by ktune leaves host headers out (a built-in has none, a prebuilt file is built)", i, v.Name)
	}
	if v.Build == nil {
		return
	}
	if v.Builtin != nil || len(v.Dispatch) > 0 || artifactKind(v.Path) != "" {
		d.errorf(vn.build, "variants[%d] (%s).build: a build makes the kernel of a variant whose kernel is the engine's source (.cu); a built-in is ktune's, a prebuilt file already built", i, v.Name)
		return
	}
	for _, t := range v.Build.Command {
		for _, x := range EntryExprs(t) {
			if slices.Contains(buildPlaceholders, x) {
				continue
			}
			if x == NKV || slices.Contains(exprSymbols(x), NKV) {
				d.errorf(vn.build, "variants[%d] (%s).build: {%s} reads nkv: a kernel is built once for every length", i, v.Name, x)
				continue
			}
			if slices.ContainsFunc(s.DefineAxes(v), func(a Axis) bool { return a.Name == x }) {
				continue
			}
			d.checkExprWith(s, i, x, vn.build, fmt.Sprintf("build {%s}", x), nil)
		}
	}
}
