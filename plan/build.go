package plan

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/ktune/ktune/internal/spec"
)

// The engine's own build (spec.Build): the plan runs the variant's build
// command where the plan's options allow it (Override.RunBuilds: ktune
// check and sweeps do, ktune plan does not) and the compiler exists, and
// caches the artifact by what it read. The cache key is the command (its
// placeholders expanded at the point, {out} and {dep} left as they are),
// the compiler's --version and the main source; an entry also keeps every
// file the command's dependency output named with its digest, and is
// used only while they all still have it. Source.BuildKey, the digest of
// all of it, is hashed with the point; the artifact's own digest is too,
// as any prebuilt file's.

// buildTimeout bounds one build.
const buildTimeout = 30 * time.Minute

// maxBuildLog bounds the compiler output a failed build keeps.
const maxBuildLog = 64 << 10

// A buildEntry is what the cache keeps beside an artifact.
type buildEntry struct {
	Command []string          `json:"command"`
	Version string            `json:"version"`
	Inputs  map[string]string `json:"inputs"` // path → sha256 of every file the dependency output named
}

// built runs (or finds) the build of a point and makes src its artifact:
// its bytes and digest, or why there are none (Missing: not built here;
// BuildLog with BuildFailed: the command failed).
func (b *builder) built(v *spec.Variant, sh *spec.Shape, defs map[string]string, nkv int, src *Source, launches []Launch, layouts []LayoutCheck) error {
	bd := v.Build
	env, _ := b.evaluator(v, sh, defs, nkv)
	var argv []string
	for _, t := range bd.Command {
		x, err := spec.ExpandEntry(t, func(e string) (string, error) {
			switch e {
			case "out", "dep", "host", "instantiate":
				return "{" + e + "}", nil
			case "arch":
				return b.arch, nil
			}
			return value(e, env, defs)
		})
		if err != nil {
			return b.pointErrorf(v, sh, defs, nkv, "build: %w", err)
		}
		argv = append(argv, x)
	}
	// The artifact replaces the source: its entries are symbols to
	// resolve (cppnames.go), not NVRTC name expressions, and the source's
	// text is hashed through BuildKey.
	src.ArtifactKind, src.Named, src.NameExprs, src.Text, src.Headers = bd.Artifact, false, nil, "", nil
	src.EngineBuild = true
	inst := instantiation(v, launches)
	memo := strings.Join(append(argv, inst), "\x00")
	if got, ok := b.builds[memo]; ok {
		src.Artifact, src.ArtifactSHA256, src.Missing, src.BuildKey, src.BuildLog, src.BuildFailed, src.LayoutProbe, src.LayoutLog =
			got.Artifact, got.ArtifactSHA256, got.Missing, got.BuildKey, got.BuildLog, got.BuildFailed, got.LayoutProbe, got.LayoutLog
		return nil
	}
	b.runBuild(v, argv, inst, src)
	b.layoutBuild(v, argv, layouts, src)
	b.builds[memo] = *src
	return nil
}

// layoutBuild builds the struct layout probe of a built variant with its
// own command, {instantiate} holding the kernel's source and the probe
// (LayoutProbe), so that ktune check compares the declared structs with
// the types as the engine's compiler lays them out. Only for a command
// that compiles {instantiate}, after a build that succeeded.
func (b *builder) layoutBuild(v *spec.Variant, argv []string, layouts []LayoutCheck, src *Source) {
	if len(layouts) == 0 || src.Artifact == nil || !slices.ContainsFunc(argv, func(t string) bool { return strings.Contains(t, "{instantiate}") }) {
		return
	}
	probe := Source{ArtifactKind: src.ArtifactKind}
	text := fmt.Sprintf("// ktune: the struct layout probe of variant %s\n#include \"%s\"\n%s", v.Name, v.Path, LayoutProbe(layouts))
	b.runBuild(v, argv, text, &probe)
	src.LayoutProbe, src.LayoutLog = probe.Artifact, probe.BuildLog
	if probe.Artifact == nil && probe.BuildLog == "" {
		src.LayoutLog = probe.Missing
	}
}

// runBuild does built's work for one expanded command.
func (b *builder) runBuild(v *spec.Variant, argv []string, inst string, src *Source) {
	tool, err := exec.LookPath(argv[0])
	if err != nil {
		src.Missing = fmt.Sprintf("the build of %s (not run: %s is not on this machine)", filepath.Base(v.Path), argv[0])
		return
	}
	version, err := b.compilerVersion(tool)
	if err != nil {
		src.Missing = fmt.Sprintf("the build of %s (not run: %v)", filepath.Base(v.Path), err)
		return
	}
	main, err := os.ReadFile(v.Path)
	if err != nil {
		src.Missing = fmt.Sprintf("the build of %s (its source: %v)", filepath.Base(v.Path), err)
		return
	}
	key0 := digestOf(append(append([]string{version, sha256Hex(main), inst, strings.Join(v.HostHeaders, "\n")}, argv...), src.ArtifactKind)...)
	dir := filepath.Join(b.over.BuildDir, key0[:2], key0)
	if b.over.BuildDir == "" {
		src.Missing = fmt.Sprintf("the build of %s (not run: no build cache)", filepath.Base(v.Path))
		return
	}
	if b.useCached(dir, src) {
		return
	}
	if !b.over.RunBuilds {
		src.Missing = fmt.Sprintf("the build of %s (not built yet: ktune check or a sweep builds it)", filepath.Base(v.Path))
		return
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dir), "build-")
	if err == nil || errors.Is(err, os.ErrNotExist) {
		if err != nil {
			if err = os.MkdirAll(filepath.Dir(dir), 0o755); err == nil {
				tmp, err = os.MkdirTemp(filepath.Dir(dir), "build-")
			}
		}
	}
	if err != nil {
		src.Missing = fmt.Sprintf("the build of %s (not run: %v)", filepath.Base(v.Path), err)
		return
	}
	defer os.RemoveAll(tmp)
	out, dep := filepath.Join(tmp, "artifact."+src.ArtifactKind), filepath.Join(tmp, "deps.d")
	host, instFile := filepath.Join(tmp, "host"), filepath.Join(tmp, "instantiate.cu")
	if err := writeBuildInputs(host, v.HostHeaders, instFile, inst); err != nil {
		src.Missing = fmt.Sprintf("the build of %s (not run: %v)", filepath.Base(v.Path), err)
		return
	}
	run := make([]string, len(argv))
	for i, t := range argv {
		run[i] = strings.NewReplacer("{out}", out, "{dep}", dep, "{host}", host, "{instantiate}", instFile).Replace(t)
	}
	ctx, cancel := context.WithTimeout(context.Background(), buildTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, tool, run[1:]...)
	cmd.Dir = filepath.Dir(v.Path)
	var log bytes.Buffer
	cmd.Stdout, cmd.Stderr = &log, &log
	start := time.Now()
	if w := b.over.BuildLog; w != nil {
		fmt.Fprintf(w, "building %s (variant %s): %s\n", filepath.Base(v.Path), v.Name, strings.Join(argv, " "))
	}
	err = cmd.Run()
	if w := b.over.BuildLog; w != nil {
		took := time.Since(start).Round(100 * time.Millisecond)
		if err != nil {
			fmt.Fprintf(w, "build failed %s in %s\n", filepath.Base(v.Path), took)
		} else {
			fmt.Fprintf(w, "built %s in %s (cached: the next plan of the same build reuses it)\n", filepath.Base(v.Path), took)
		}
	}
	text := log.String()
	if len(text) > maxBuildLog {
		text = text[:maxBuildLog] + "\n[… cut at 64 KiB]"
	}
	if err != nil {
		src.BuildFailed, src.BuildLog = true, fmt.Sprintf("$ %s\n%s\n%v", strings.Join(run, " "), text, err)
		src.BuildKey = key0
		return
	}
	inputs := map[string]string{v.Path: sha256Hex(main)}
	if d, err := os.ReadFile(dep); err == nil {
		for _, p := range depFiles(string(d)) {
			if strings.HasPrefix(p, tmp) {
				continue // ktune's own inputs (host, instantiate): hashed in the key
			}
			if data, err := os.ReadFile(p); err == nil {
				inputs[p] = sha256Hex(data)
			}
		}
	}
	e := buildEntry{Command: argv, Version: version, Inputs: inputs}
	j, _ := json.MarshalIndent(e, "", "  ")
	if err := os.WriteFile(filepath.Join(tmp, "entry.json"), j, 0o644); err == nil {
		os.RemoveAll(dir)
		if err := os.Rename(tmp, dir); err == nil && b.useCached(dir, src) {
			return
		}
	}
	src.Missing = fmt.Sprintf("the build of %s (built, but its cache %s could not be written)", filepath.Base(v.Path), dir)
}

// useCached loads a cache entry whose inputs all still have their
// recorded digests.
func (b *builder) useCached(dir string, src *Source) bool {
	j, err := os.ReadFile(filepath.Join(dir, "entry.json"))
	if err != nil {
		return false
	}
	var e buildEntry
	if json.Unmarshal(j, &e) != nil {
		return false
	}
	paths := make([]string, 0, len(e.Inputs))
	for p := range e.Inputs {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	parts := append([]string{e.Version}, e.Command...)
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil || sha256Hex(data) != e.Inputs[p] {
			return false
		}
		parts = append(parts, p, e.Inputs[p])
	}
	art, err := os.ReadFile(filepath.Join(dir, "artifact."+src.ArtifactKind))
	if err != nil {
		return false
	}
	src.Artifact, src.ArtifactSHA256, src.BuildKey = art, sha256Hex(art), digestOf(parts...)
	src.BuildInputs = len(paths)
	return true
}

// compilerVersion is a compiler's --version output, once per tool.
func (b *builder) compilerVersion(tool string) (string, error) {
	if v, ok := b.versions[tool]; ok {
		return v, nil
	}
	out, err := exec.Command(tool, "--version").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("%s --version: %w", tool, err)
	}
	b.versions[tool] = strings.TrimSpace(string(out))
	return b.versions[tool], nil
}

// depFiles lists the files of a make-style dependency file: every
// prerequisite of its rules, line continuations joined, escaped spaces
// kept.
func depFiles(d string) []string {
	d = strings.ReplaceAll(d, "\\\n", " ")
	var out []string
	for _, line := range strings.Split(d, "\n") {
		_, deps, ok := strings.Cut(line, ": ")
		if !ok {
			continue
		}
		for _, f := range strings.Fields(strings.ReplaceAll(deps, "\\ ", "\x00")) {
			f = strings.ReplaceAll(f, "\x00", " ")
			if !slices.Contains(out, f) {
				out = append(out, f)
			}
		}
	}
	return out
}

// digestOf is the hex SHA-256 of length-prefixed parts.
func digestOf(parts ...string) string {
	h := sha256.New()
	for _, p := range parts {
		fmt.Fprintf(h, "%d:%s", len(p), p)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// instantiation is the C++ of {instantiate}: the variant's source, then
// the address of every launch's entry, which makes a compiler emit each
// template instantiation as the engine's launcher would (for an engine
// whose launcher needs its framework's headers: vLLM's needs torch's).
// An entry names its instantiation in C++, so the spelling the demangler
// gives ((vllm::Fp8KVCacheDataType)0 for an enum) instantiates it too.
func instantiation(v *spec.Variant, launches []Launch) string {
	var b strings.Builder
	fmt.Fprintf(&b, "// ktune: the launches' entries of variant %s, instantiated\n#include \"%s\"\n", v.Name, v.Path)
	b.WriteString("static void* const ktune_entries[] = {\n")
	for i, l := range launches {
		if i < len(v.Launches) && v.Launches[i].Kernel != "" {
			continue
		}
		fmt.Fprintf(&b, "    (void*)&%s,\n", l.Entry)
	}
	b.WriteString("};\n")
	return b.String()
}

// writeBuildInputs makes {host}, a directory holding every host header as
// an empty file (host_headers, for a device build without the framework),
// and {instantiate}.
func writeBuildInputs(host string, headers []string, instFile, inst string) error {
	for _, h := range headers {
		p := filepath.Join(host, filepath.FromSlash(h))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, []byte("// ktune: host code, left out of a device-only build (host_headers)\n"), 0o644); err != nil {
			return err
		}
	}
	if err := os.MkdirAll(host, 0o755); err != nil {
		return err
	}
	return os.WriteFile(instFile, []byte(inst), 0o644)
}
