package probe

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/ktune/ktune/internal/cuda"
	"github.com/ktune/ktune/internal/results"
	"github.com/ktune/ktune/sweep"
)

// cacheFormat versions the on-disk cache layout and the key derivation;
// bump it to orphan every old entry at once.
const cacheFormat = "ktune-cubin-1"

// compileOptions returns the NVRTC options of a source: the architecture,
// line info (so profilers and compute-sanitizer map SASS back to the .cu),
// C++17, then one -D per define in the plan's (sorted) order, then the
// point's own flags.
func compileOptions(arch string, defines []results.Define, flags []string) []string {
	opts := []string{"-arch=" + arch, "-lineinfo", "--std=c++17"}
	for _, d := range defines {
		opts = append(opts, "-D"+d.Name+"="+d.Value)
	}
	return append(opts, flags...)
}

// cacheKey is the content address of a CUBIN: sha256 over everything that
// can change the bytes NVRTC emits. Every field is length-prefixed so that
// no two different inputs serialize alike (e.g. moving a character from
// the source into a header name).
func cacheKey(src sweep.Source, opts []string, arch, nvrtcVersion string) string {
	h := sha256.New()
	field := func(s string) {
		var n [8]byte
		binary.LittleEndian.PutUint64(n[:], uint64(len(s)))
		h.Write(n[:])
		h.Write([]byte(s))
	}
	field(cacheFormat)
	field(arch)
	field(nvrtcVersion)
	field(src.Name)
	field(src.Text)
	names := make([]string, 0, len(src.Headers))
	for n := range src.Headers {
		names = append(names, n)
	}
	sort.Strings(names)
	field(fmt.Sprint(len(names)))
	for _, n := range names {
		field(n)
		field(src.Headers[n])
	}
	// Options keep their order: a later -D overrides an earlier one.
	field(fmt.Sprint(len(opts)))
	for _, o := range opts {
		field(o)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// defaultCacheDir is $XDG_CACHE_HOME/ktune, else ~/.cache/ktune.
func defaultCacheDir() (string, error) {
	if x := os.Getenv("XDG_CACHE_HOME"); x != "" {
		return filepath.Join(x, "ktune"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("finding the CUBIN cache directory: %w", err)
	}
	return filepath.Join(home, ".cache", "ktune"), nil
}

// A diskCache stores CUBINs (and their NVRTC logs) by content key.
type diskCache struct{ dir string }

func (c diskCache) path(key, ext string) string {
	return filepath.Join(c.dir, key[:2], key+ext)
}

// get returns the cached CUBIN and log, ok false on a miss. A damaged
// entry is a miss, not an error: the compile rewrites it.
func (c diskCache) get(key string) (cubin []byte, log string, ok bool) {
	if c.dir == "" {
		return nil, "", false
	}
	b, err := os.ReadFile(c.path(key, ".cubin"))
	if err != nil || len(b) == 0 {
		return nil, "", false
	}
	l, _ := os.ReadFile(c.path(key, ".log"))
	return b, string(l), true
}

// put stores an entry. Each file is written to a temporary name and
// renamed, so a concurrent reader or a crash never sees half a CUBIN.
func (c diskCache) put(key string, cubin []byte, log string) error {
	if c.dir == "" {
		return nil
	}
	dir := filepath.Dir(c.path(key, ""))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("caching CUBIN %s: %w", key[:12], err)
	}
	write := func(name string, b []byte) error {
		f, err := os.CreateTemp(dir, ".tmp-*")
		if err != nil {
			return err
		}
		_, werr := f.Write(b)
		cerr := f.Close()
		if err := errors.Join(werr, cerr); err != nil {
			os.Remove(f.Name())
			return err
		}
		return os.Rename(f.Name(), name)
	}
	// The log goes first: a CUBIN is only visible once its log is there.
	if err := write(c.path(key, ".log"), []byte(log)); err != nil {
		return fmt.Errorf("caching CUBIN %s: %w", key[:12], err)
	}
	if err := write(c.path(key, ".cubin"), cubin); err != nil {
		return fmt.Errorf("caching CUBIN %s: %w", key[:12], err)
	}
	return nil
}

// A build is the outcome of compiling one source with one set of options.
type build struct {
	key    string
	cubin  []byte
	record results.Compile
	// failed is set when NVRTC rejected the source (its log is in
	// record.Log): the point's fault, not the backend's.
	failed bool
}

// compile returns the CUBIN for src with opts from the disk cache or from
// NVRTC. An error means NVRTC itself could not run; a source NVRTC rejects
// comes back as a build with failed set.
func (b *Backend) compile(src sweep.Source, opts []string) (*build, error) {
	key := cacheKey(src, opts, b.arch, b.nvrtcVersion)
	out := &build{key: key, record: results.Compile{Flags: opts}}
	if cubin, log, ok := b.cache.get(key); ok {
		out.cubin, out.record.Cached, out.record.Log = cubin, true, log
		return out, nil
	}
	start := time.Now()
	cubin, log, err := b.nvrtc.Compile(src.Text, src.Name, src.Headers, opts)
	out.record.Seconds = time.Since(start).Seconds()
	out.record.Log = log
	if err != nil {
		var ce *cuda.CompileError
		if errors.As(err, &ce) {
			if out.record.Log == "" {
				out.record.Log = ce.Log
			}
			out.failed = true
			return out, nil
		}
		return nil, fmt.Errorf("compiling %s: %w", src.Name, err)
	}
	out.cubin = cubin
	if err := b.cache.put(key, cubin, log); err != nil {
		// A read-only cache slows the next run down; it does not make this
		// one wrong.
		b.logf("warning: %v", err)
	}
	return out, nil
}
