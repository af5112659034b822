package plan

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/ktune/ktune/internal/spec"
	"github.com/ktune/ktune/kernels"
)

// external returns the headers a kernel kept in another tree includes,
// directly or through another header, and the kernel's text as NVRTC is
// to read it. Each #include "name" is looked up in the including file's
// directory and then in the variant's include directories, each #include
// <name> in the include directories, then (std_headers: true) among
// ktune's C and C++ headers for device code (kernels/nvrtcstd), and a
// quoted name found nowhere else among ktune's kernels/*.cuh.
//
// A header is keyed by the file it resolves to, not by how an #include
// spells it: its path relative to the kernel's directory (slash-separated,
// so the same tree gives the same key, and hash, on every machine). NVRTC
// finds a header by the name an #include gives, so every #include whose
// spelling is not its file's key is rewritten to the key in the text
// NVRTC reads (line numbers unchanged): one file reached under two
// spellings is one header, and two files under one spelling (a util.h in
// two directories) are two. Every header found is hashed with the point,
// so that editing one invalidates its results and its cached CUBIN. A
// name found nowhere (a toolkit header such as <cuda_fp16.h>) is left to
// NVRTC's own search (its built-in headers, or a -I among the variant's
// flags); the NVRTC version, part of the cache key, stands for those.
//
// Every #include line counts, whatever #if surrounds it: the set is a
// superset of what the preprocessor reads, which costs at most a
// needless re-measurement when an unused header changes.
func (b *builder) external(v *spec.Variant, text string) (string, map[string]string, error) {
	root := filepath.Dir(v.Path)
	out := map[string]string{}
	// resolve finds an include of a file in dir (empty: not on disk),
	// returning its key and its text; ok is false when it is not found.
	resolve := func(inc include, dir string) (key, text string, onDisk string, ok bool, err error) {
		if slices.Contains(v.HostHeaders, inc.name) {
			return inc.name, "// ktune: host code, left out of a device-only compile (host_headers)\n", "", true, nil
		}
		var dirs []string
		if inc.quoted && dir != "" {
			dirs = append(dirs, dir)
		}
		for _, d := range append(dirs, v.Include...) {
			p := filepath.Join(d, filepath.FromSlash(inc.name))
			data, rerr := os.ReadFile(p)
			if rerr != nil {
				continue
			}
			rel, rerr := filepath.Rel(root, p)
			if rerr != nil {
				return "", "", "", false, fmt.Errorf("keying header %s: %w", p, rerr)
			}
			return filepath.ToSlash(rel), string(data), p, true, nil
		}
		if v.StdHeaders {
			if data, rerr := fs.ReadFile(kernels.StdFS, path.Join(kernels.StdDir, inc.name)); rerr == nil {
				return inc.name, string(data), "", true, nil
			}
		}
		if h, found := b.headers[inc.name]; found && inc.quoted {
			return inc.name, h, "", true, nil
		}
		return "", "", "", false, nil
	}
	var walk func(text, dir string) (string, error)
	walk = func(text, dir string) (string, error) {
		renames := map[string]string{}
		for _, inc := range includes(text) {
			key, htext, p, ok, err := resolve(inc, dir)
			if err != nil || !ok {
				if err != nil {
					return "", err
				}
				continue
			}
			if key != inc.name {
				renames[inc.spelled()] = `"` + key + `"`
			}
			if _, seen := out[key]; seen {
				continue
			}
			out[key] = "" // claimed before the walk, so that a cycle ends
			hdir := ""
			if p != "" {
				hdir = filepath.Dir(p)
			}
			rewritten, err := walk(htext, hdir)
			if err != nil {
				return "", err
			}
			out[key] = rewritten
		}
		return rewriteIncludes(text, renames), nil
	}
	text, err := walk(text, root)
	if err != nil {
		return "", nil, fmt.Errorf("reading the headers of variant %s: %w", v.Name, err)
	}
	return text, out, nil
}

// An include is one #include directive's name.
type include struct {
	name   string
	quoted bool // "name" rather than <name>
}

// spelled is the include as written after #include: "name" or <name>.
func (i include) spelled() string {
	if i.quoted {
		return `"` + i.name + `"`
	}
	return "<" + i.name + ">"
}

// includeDirective splits a line into an #include directive's parts:
// the text before the name, the spelled name ("x" or <x>) and the rest.
func includeDirective(line string) (before, spelled, after string, ok bool) {
	t := strings.TrimLeft(line, " \t")
	if !strings.HasPrefix(t, "#") {
		return "", "", "", false
	}
	rest := strings.TrimLeft(strings.TrimPrefix(t, "#"), " \t")
	if !strings.HasPrefix(rest, "include") {
		return "", "", "", false
	}
	rest = strings.TrimLeft(strings.TrimPrefix(rest, "include"), " \t")
	if len(rest) < 2 {
		return "", "", "", false
	}
	closer := byte('"')
	if rest[0] == '<' {
		closer = '>'
	} else if rest[0] != '"' {
		return "", "", "", false
	}
	end := strings.IndexByte(rest[1:], closer)
	if end < 0 {
		return "", "", "", false
	}
	start := len(line) - len(rest)
	return line[:start], rest[:end+2], rest[end+2:], true
}

// includes lists the #include directives of a C++ text in order.
func includes(text string) []include {
	var out []include
	for _, line := range strings.Split(text, "\n") {
		if _, sp, _, ok := includeDirective(line); ok {
			out = append(out, include{name: sp[1 : len(sp)-1], quoted: sp[0] == '"'})
		}
	}
	return out
}

// rewriteIncludes replaces the spelled names of #include lines by their
// renames, leaving every other line, and the line count, as it was.
func rewriteIncludes(text string, renames map[string]string) string {
	if len(renames) == 0 {
		return text
	}
	lines := strings.Split(text, "\n")
	for i, line := range lines {
		if before, sp, after, ok := includeDirective(line); ok {
			if to, ok := renames[sp]; ok {
				lines[i] = before + to + after
			}
		}
	}
	return strings.Join(lines, "\n")
}

// sha256Hex is the hex SHA-256 of data.
func sha256Hex(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}
