package probe

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/ktune/ktune/internal/abi"
	"github.com/ktune/ktune/internal/cuda"
	"github.com/ktune/ktune/internal/results"
	"github.com/ktune/ktune/plan"
)

// cacheFormat versions the on-disk cache layout and the key derivation;
// bump it to orphan every old entry at once.
const cacheFormat = "ktune-cubin-1"

// compileOptions returns the NVRTC options of a source: the device's
// architecture, unless the point's flags name one (an engine building for
// sm_90a), then one -D per define in the plan's (sorted) order, then the
// point's flags as the plan gives them (plan.Point.Flags: -lineinfo,
// --std=c++17 and the variant's own, in their one home).
func compileOptions(arch string, defines abi.Defines, flags []string) []string {
	var opts []string
	if !slices.ContainsFunc(flags, isArchFlag) {
		opts = append(opts, "-arch="+arch)
	}
	for _, d := range defines {
		opts = append(opts, "-D"+d.Name+"="+d.Value)
	}
	return append(opts, flags...)
}

// isArchFlag reports whether an NVRTC option sets the target architecture.
func isArchFlag(f string) bool {
	return strings.HasPrefix(f, "-arch") || strings.HasPrefix(f, "--gpu-architecture")
}

// cacheKey is the content address of a CUBIN: sha256 over everything that
// can change the bytes NVRTC emits. Every field is length-prefixed so that
// no two different inputs serialize alike (e.g. moving a character from
// the source into a header name).
func cacheKey(src plan.Source, opts []string, arch, nvrtcVersion string) string {
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
	// Name expressions choose which template instantiations NVRTC emits.
	if len(src.NameExprs) > 0 {
		field("names " + fmt.Sprint(len(src.NameExprs)))
		for _, e := range src.NameExprs {
			field(e)
		}
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

// get returns the cached CUBIN, log and lowered names, ok false on a
// miss. A damaged entry is a miss, not an error: the compile rewrites it.
func (c diskCache) get(key string) (cubin []byte, log string, lowered map[string]string, ok bool) {
	if c.dir == "" {
		return nil, "", nil, false
	}
	b, err := os.ReadFile(c.path(key, ".cubin"))
	if err != nil || len(b) == 0 {
		return nil, "", nil, false
	}
	l, _ := os.ReadFile(c.path(key, ".log"))
	if n, err := os.ReadFile(c.path(key, ".names")); err == nil {
		if json.Unmarshal(n, &lowered) != nil {
			return nil, "", nil, false
		}
	}
	return b, string(l), lowered, true
}

// put stores an entry. Each file is written to a temporary name and
// renamed, so a concurrent reader or a crash never sees half a CUBIN.
// lowered, the symbols of name expressions, goes into key.names.
func (c diskCache) put(key string, cubin []byte, log string, lowered map[string]string) error {
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
	// The log and names go first: a CUBIN is only visible once they are
	// there.
	if err := write(c.path(key, ".log"), []byte(log)); err != nil {
		return fmt.Errorf("caching CUBIN %s: %w", key[:12], err)
	}
	if lowered != nil {
		names, err := json.Marshal(lowered)
		if err == nil {
			err = write(c.path(key, ".names"), names)
		}
		if err != nil {
			return fmt.Errorf("caching CUBIN %s: %w", key[:12], err)
		}
	}
	if err := write(c.path(key, ".cubin"), cubin); err != nil {
		return fmt.Errorf("caching CUBIN %s: %w", key[:12], err)
	}
	return nil
}

// A build is the outcome of compiling one source with one set of options.
type build struct {
	key   string
	cubin []byte
	// lowered maps each name expression of the source to its symbol.
	lowered map[string]string
	record  results.Compile
	// failed is set when NVRTC rejected the source (its log is in
	// record.Log): the point's fault, not the backend's.
	failed bool
}

// compile returns the CUBIN for src with opts from the disk cache, from
// the process that is compiling it right now (the sweep's precompiler,
// another worker) or from NVRTC. An error means NVRTC itself could not
// run; a source NVRTC rejects comes back as a build with failed set.
//
// The record says Cached when this process did not run NVRTC, and its
// Seconds are what the point paid for its kernel on the measurement path:
// NVRTC's run time when it compiled, the wait when another process was
// compiling the same key, zero for a plain cache hit.
func (b *Backend) compile(src plan.Source, opts []string) (*build, error) {
	key := cacheKey(src, opts, b.arch, b.nvrtcVersion)
	out := &build{key: key, record: results.Compile{Flags: opts}}
	got, err := b.cache.obtain(context.Background(), key, src, opts, b.nvrtc.CompileNamed, cacheWait{}, b.logf)
	if err != nil {
		return nil, err
	}
	out.cubin, out.record.Log, out.failed, out.lowered = got.cubin, got.log, got.rejected, got.lowered
	out.record.Cached = got.origin != fromNVRTC
	out.record.Seconds = got.compileSec + got.waitSec
	return out, nil
}

// A compileFunc runs NVRTC: (*cuda.NVRTC).CompileNamed, or a fake in
// tests. exprs are C++ name expressions to resolve; lowered maps each to
// its symbol.
type compileFunc func(src, name string, headers map[string]string, opts, exprs []string) (cubin []byte, log string, lowered map[string]string, err error)

// An origin says where obtain found a CUBIN.
type origin int

const (
	fromCache origin = iota // in the cache when first asked for
	fromNVRTC               // compiled by this call
	fromOther               // compiled by another claimant while this call waited
)

// A fetched CUBIN and how it was come by.
type fetched struct {
	cubin   []byte
	log     string
	lowered map[string]string
	origin  origin
	// rejected: NVRTC refused the source (log says why); cubin is nil.
	rejected bool
	// compileSec is NVRTC's run time (fromNVRTC), waitSec the time spent
	// waiting for another claimant.
	compileSec, waitSec float64
}

// cacheWait tunes how obtain waits for another claimant; the zero value
// means the defaults.
type cacheWait struct {
	poll  time.Duration // between looks at the cache; 0: 25 ms
	stale time.Duration // a claim older than this is abandoned; 0: staleClaim
	now   func() time.Time
}

// staleClaim bounds how long a claim is honoured whatever its holder:
// no kernel of ktune takes NVRTC anywhere near this long, so an older
// claim was left by a process that died on another host (a shared cache
// on NFS) where its pid cannot be checked.
const staleClaim = 10 * time.Minute

// obtain returns the CUBIN of key. Several processes share one cache (the
// sweep's precompiler and its workers, shards of a job array on a shared
// file system), so that a key is compiled once: whoever misses the cache
// claims the key with an exclusive lock file and compiles; whoever finds
// the key claimed waits until the CUBIN appears, or the claim goes away
// without one (NVRTC rejected the source or its holder failed: then it
// compiles the key itself, which also gets it the log), or the claim is
// stale (its holder is dead). Waiting rather than compiling a second copy
// is the point: a worker whose kernel is already in the precompiler's
// hands gets it sooner, and the CPU stays with the compiles ahead.
//
// A cache that cannot hold the lock (disabled, read-only) degrades to
// compiling without one; the atomic put keeps a duplicate compile
// harmless. warn receives non-fatal problems.
func (c diskCache) obtain(ctx context.Context, key string, src plan.Source, opts []string,
	compile compileFunc, w cacheWait, warn func(string, ...any)) (fetched, error) {
	if w.poll <= 0 {
		w.poll = 25 * time.Millisecond
	}
	if w.stale <= 0 {
		w.stale = staleClaim
	}
	if w.now == nil {
		w.now = time.Now
	}
	start := w.now()
	waited := false
	hit := func(cubin []byte, log string, lowered map[string]string) fetched {
		f := fetched{cubin: cubin, log: log, lowered: lowered, origin: fromCache}
		if waited {
			f.origin, f.waitSec = fromOther, w.now().Sub(start).Seconds()
		}
		return f
	}
	for {
		if cubin, log, lowered, ok := c.get(key); ok {
			return hit(cubin, log, lowered), nil
		}
		release, held, err := c.claim(key, w.now, w.stale)
		if err != nil {
			warn("warning: %v; compiling without it", err)
			release, held = func() {}, true
		}
		if held {
			defer release()
			// The previous claimant may have finished between the look
			// above and the claim.
			if cubin, log, lowered, ok := c.get(key); ok {
				return hit(cubin, log, lowered), nil
			}
			var waitSec float64
			if waited {
				waitSec = w.now().Sub(start).Seconds()
			}
			f, err := compileInto(c, key, src, opts, compile, w.now, warn)
			f.waitSec = waitSec
			return f, err
		}
		waited = true
		select {
		case <-ctx.Done():
			return fetched{}, fmt.Errorf("waiting for another process to compile %s: %w", src.Name, ctx.Err())
		case <-time.After(w.poll):
		}
	}
}

// compileInto runs NVRTC and stores a CUBIN it makes.
func compileInto(c diskCache, key string, src plan.Source, opts []string, compile compileFunc,
	now func() time.Time, warn func(string, ...any)) (fetched, error) {
	t0 := now()
	cubin, log, lowered, err := compile(src.Text, src.Name, src.Headers, opts, src.NameExprs)
	f := fetched{origin: fromNVRTC, log: log, lowered: lowered, compileSec: now().Sub(t0).Seconds()}
	if err != nil {
		var ce *cuda.CompileError
		if errors.As(err, &ce) {
			if f.log == "" {
				f.log = ce.Log
			}
			f.rejected = true
			return f, nil
		}
		return f, fmt.Errorf("compiling %s: %w", src.Name, err)
	}
	f.cubin = cubin
	if err := c.put(key, cubin, log, lowered); err != nil {
		// A read-only cache slows the next run down; it does not make this
		// one wrong.
		warn("warning: %v", err)
	}
	return f, nil
}

// claim takes the compile claim of key: a lock file made with O_EXCL (also
// exclusive on NFS v3 and later) naming its holder as "host pid". held is
// false when a live holder has it. A claim whose holder is gone (a pid
// that no longer exists on this host, or a file older than stale) is
// removed and taken over. A disabled cache always grants the claim.
func (c diskCache) claim(key string, now func() time.Time, stale time.Duration) (release func(), held bool, err error) {
	if c.dir == "" {
		return func() {}, true, nil
	}
	path := c.path(key, ".lock")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, false, fmt.Errorf("claiming CUBIN %s: %w", key[:12], err)
	}
	host, _ := os.Hostname()
	me := fmt.Sprintf("%s %d\n", host, os.Getpid())
	for attempt := 0; ; attempt++ {
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if err == nil {
			_, werr := f.WriteString(me)
			if err := errors.Join(werr, f.Close()); err != nil {
				os.Remove(path)
				return nil, false, fmt.Errorf("claiming CUBIN %s: %w", key[:12], err)
			}
			return func() { os.Remove(path) }, true, nil
		}
		if !errors.Is(err, fs.ErrExist) {
			return nil, false, fmt.Errorf("claiming CUBIN %s: %w", key[:12], err)
		}
		if attempt > 0 || !claimStale(path, host, now(), stale) {
			return nil, false, nil
		}
		// Two waiters may both find the claim stale and both take it
		// over; each then compiles, and the atomic put keeps that
		// harmless.
		os.Remove(path)
	}
}

// claimStale reports whether the claim file at path has lost its holder.
func claimStale(path, host string, now time.Time, stale time.Duration) bool {
	st, err := os.Stat(path)
	if err != nil {
		return false // gone already: the next attempt takes it
	}
	if now.Sub(st.ModTime()) > stale {
		return true
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return false
	}
	var h string
	var pid int
	if _, err := fmt.Sscanf(string(b), "%s %d", &h, &pid); err != nil {
		// Being written this instant, or damaged: the age bound decides.
		return false
	}
	return h == host && !processAlive(pid)
}

// processAlive reports whether pid names a process of this host. Signal
// 0 checks without sending; EPERM means it exists under another user.
func processAlive(pid int) bool {
	if pid <= 0 {
		return false
	}
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
