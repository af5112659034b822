package plan

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/ktune/ktune/internal/spec"
)

// external returns the headers a kernel kept in another tree includes,
// directly or through another header: each #include "name" is looked up
// in the including file's directory and then in the variant's include
// directories, each #include <name> in the include directories, and a name
// found in neither among ktune's kernels/*.cuh. Every header found this
// way is handed to NVRTC by its include name and hashed with the point, so
// that editing a header the kernel includes invalidates its results and
// its cached CUBIN. A name found nowhere (a toolkit header such as
// <cuda_fp16.h>) is left to NVRTC's own search (its built-in headers, or
// a -I among the variant's flags); the NVRTC version, part of the cache
// key, stands for those.
//
// Every #include line counts, whatever #if surrounds it: the set is a
// superset of what the preprocessor reads, which costs at most a
// needless re-measurement when an unused header changes.
func (b *builder) external(v *spec.Variant, text string) (map[string]string, error) {
	out := map[string]string{}
	var walk func(text, dir string) error
	walk = func(text, dir string) error {
		for _, inc := range includes(text) {
			if _, seen := out[inc.name]; seen {
				continue
			}
			var dirs []string
			if inc.quoted {
				dirs = append(dirs, dir)
			}
			dirs = append(dirs, v.Include...)
			found := false
			for _, d := range dirs {
				p := filepath.Join(d, filepath.FromSlash(inc.name))
				data, err := os.ReadFile(p)
				if err != nil {
					continue
				}
				out[inc.name], found = string(data), true
				if err := walk(string(data), filepath.Dir(p)); err != nil {
					return err
				}
				break
			}
			if h, ok := b.headers[inc.name]; !found && ok && inc.quoted {
				out[inc.name] = h
				if err := walk(h, ""); err != nil {
					return err
				}
			}
		}
		return nil
	}
	if err := walk(text, filepath.Dir(v.Path)); err != nil {
		return nil, fmt.Errorf("reading the headers of variant %s: %w", v.Name, err)
	}
	return out, nil
}

// An include is one #include directive's name.
type include struct {
	name   string
	quoted bool // "name" rather than <name>
}

// includes lists the #include directives of a C++ text in order.
func includes(text string) []include {
	var out []include
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if !strings.HasPrefix(line, "#") {
			continue
		}
		rest := strings.TrimSpace(strings.TrimPrefix(line, "#"))
		if !strings.HasPrefix(rest, "include") {
			continue
		}
		rest = strings.TrimSpace(strings.TrimPrefix(rest, "include"))
		if len(rest) < 2 {
			continue
		}
		closer := byte('"')
		if rest[0] == '<' {
			closer = '>'
		} else if rest[0] != '"' {
			continue
		}
		end := strings.IndexByte(rest[1:], closer)
		if end < 0 {
			continue
		}
		out = append(out, include{name: rest[1 : 1+end], quoted: closer == '"'})
	}
	return out
}

// sha256Hex is the hex SHA-256 of data.
func sha256Hex(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}
