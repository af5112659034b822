// Package probe is ktune's CUDA backend: it compiles one point's kernels
// with NVRTC (through a content-addressed CUBIN cache), builds their
// host-side arguments, runs the gates of package gate (the float64
// oracle, the bitwise twin, CUDA-graph replay, ...) over a session it
// lends them (the workspace, the one launch path, the input cache, the
// findings of the checks after every launch), and only then measures them
// with the cold, hot and graph probes, each under the stopping rule of
// internal/stats, judging what the timed launches computed. It implements
// plan.Backend.
//
// One Backend owns one device context, one stream and the measurement
// kernels of kernels/util.cu. It is meant to be driven by one goroutine;
// the sweep runs points one after another because concurrent kernels would
// share the memory bandwidth being measured.
package probe

import (
	"context"
	"fmt"
	"io"
	"os"
	"sync/atomic"
	"unsafe"

	"github.com/ktune/ktune/internal/buildinfo"
	"github.com/ktune/ktune/internal/cuda"
	"github.com/ktune/ktune/internal/results"
	"github.com/ktune/ktune/kernels"
	"github.com/ktune/ktune/plan"
)

// Options configure a Backend.
type Options struct {
	// Device is the CUDA device ordinal.
	Device int
	// CacheDir holds compiled CUBINs by content key (source, headers,
	// defines, flags, architecture and NVRTC version). Empty: the default,
	// $XDG_CACHE_HOME/ktune or ~/.cache/ktune. "off" disables the cache.
	CacheDir string
	// SASSDir, when set, receives a copy of every CUBIN the backend loads,
	// named <variant>-<key>.cubin, and, when a CUDA disassembler is
	// installed, its SASS listing next to it as <variant>-<key>.sass.
	SASSDir string
	// Log receives progress and debug lines; nil discards them.
	Log io.Writer
	// Energy records the board's energy per decode step beside the hot
	// and graph probes (energy.go). Off by default: each window runs the
	// probe's launches for as long as NVML's counter needs (about 2.2 s
	// on an H100, whose counter moves every ~100 ms), per probe and point.
	Energy bool
	// LaunchRun is how many launches of a compiled kernel one run reaches
	// with the launch-count check's long run (launchcount.go); 0 means
	// launchRunTotal, a few thousand.
	LaunchRun int
}

// A Backend runs points on one CUDA device.
type Backend struct {
	opts  Options
	log   io.Writer
	cache diskCache

	drv    *cuda.Driver
	nvrtc  *cuda.NVRTC
	dev    cuda.Device
	ctx    *cuda.Context
	stream *cuda.Stream
	start  *cuda.Event
	stop   *cuda.Event

	arch            string // "sm_90"
	nvrtcVersion    string // "13.0"
	maxThreadsPerSM int
	env             results.Env
	haveBW          bool

	// disasm disassembles CUBINs; nil when no cuobjdump or nvdisasm is
	// installed (Resource.LoadsBeforeChain then stays -1).
	disasm disassembler

	util *utilKernels
	// hostFlags is mapped host memory: word 0 is the stream blocker's
	// release flag, word 1 its timed-out flag.
	hostFlags []byte
	flagsDev  cuda.DevPtr
	scratch   cuda.DevPtr // 16 bytes: ktune_clock's output, ktune_read_bw's sink
	// staging is pinned host memory the coalesced uploads write from
	// (cudaDevice.stage), stagingDev the device memory scattered pieces
	// go through (stageDevice); each allocated at its first use.
	staging    []byte
	stagingDev cuda.DevPtr

	// gpu is what the orchestration uses of the device: cudaDevice{b} on a
	// real one, a model of the kernels in tests.
	gpu device

	flush     cuda.DevPtr
	haveFlush bool        // the L2 flush buffer is allocated (and zeroed)
	energy    boardEnergy // the board's energy meter (energy.go)
	ws        *workspace

	// base is the last uniform gate base drawn (upload.go uploadSet).
	base *cachedBase
	// inputs are the derived gate inputs and their references, shared by
	// the kernels of a sweep (inputcache.go); nil until first used.
	inputs *inputCache

	loaded map[string]*kernelPair  // by CUBIN key
	gates  map[string]*gateVerdict // by Point.GateKey

	// dead is the sticky error that poisoned the context; once set, every
	// Run fails at once.
	dead error
}

// New opens the driver and NVRTC, makes a context on opts.Device and
// compiles the measurement kernels. The read bandwidth is measured on the
// first call of Env, not here.
func New(opts Options) (*Backend, error) {
	b := &Backend{
		opts:   opts,
		log:    opts.Log,
		loaded: map[string]*kernelPair{},
		gates:  map[string]*gateVerdict{},
		disasm: findDisassembler(),
	}
	if b.log == nil {
		b.log = io.Discard
	}
	b.gpu = cudaDevice{b}
	switch opts.CacheDir {
	case "off":
	case "":
		dir, err := defaultCacheDir()
		if err != nil {
			return nil, err
		}
		b.cache.dir = dir
	default:
		b.cache.dir = opts.CacheDir
	}
	if err := b.open(); err != nil {
		b.Close()
		return nil, err
	}
	return b, nil
}

func (b *Backend) open() error {
	var err error
	if b.drv, err = cuda.Open(); err != nil {
		return fmt.Errorf("opening the CUDA driver: %w", err)
	}
	if b.nvrtc, err = cuda.OpenNVRTC(); err != nil {
		return fmt.Errorf("opening NVRTC: %w", err)
	}
	n, err := b.drv.DeviceCount()
	if err != nil {
		return fmt.Errorf("counting CUDA devices: %w", err)
	}
	if n == 0 {
		return fmt.Errorf("device %d requested, none present: %w", b.opts.Device, cuda.ErrNoUsableDevice)
	}
	if b.opts.Device < 0 || b.opts.Device >= n {
		return fmt.Errorf("device %d requested, %d present", b.opts.Device, n)
	}
	if b.dev, err = b.drv.Device(b.opts.Device); err != nil {
		return fmt.Errorf("opening device %d: %w", b.opts.Device, err)
	}
	if err := b.describe(); err != nil {
		return fmt.Errorf("reading the attributes of device %d: %w", b.opts.Device, err)
	}
	// An NVRTC older than the device (11.8 on a GPU newer than sm_90)
	// would reject every kernel with "invalid value for
	// --gpu-architecture"; say which release is needed instead.
	if ma, mi, err := b.nvrtc.Version(); err == nil {
		if sms, err := b.nvrtc.SupportedArchs(); err == nil {
			if why := cuda.ArchSupport(b.arch, ma, mi, sms); why != "" {
				return fmt.Errorf("device %d: %s (%s): install a newer CUDA toolkit's NVRTC or set KTUNE_NVRTC: %w", b.opts.Device, why, b.nvrtc.Path(), cuda.ErrNoUsableDevice)
			}
		}
	}
	if b.ctx, err = b.dev.NewContext(); err != nil {
		return fmt.Errorf("making a context on device %d: %w", b.opts.Device, err)
	}
	if b.stream, err = b.ctx.NewStream(); err != nil {
		return fmt.Errorf("making a stream: %w", err)
	}
	if b.start, err = b.ctx.NewEvent(); err != nil {
		return fmt.Errorf("making an event: %w", err)
	}
	if b.stop, err = b.ctx.NewEvent(); err != nil {
		return fmt.Errorf("making an event: %w", err)
	}
	if b.hostFlags, b.flagsDev, err = b.ctx.HostAllocMapped(16); err != nil {
		return fmt.Errorf("allocating the stream blocker's flag: %w", err)
	}
	if b.scratch, err = b.allocZeroed(16); err != nil {
		return fmt.Errorf("allocating scratch memory: %w", err)
	}
	if b.util, err = b.loadUtil(); err != nil {
		return err
	}
	if b.opts.Energy {
		b.energy.open = nvmlMeter(b.env.UUID)
	}
	return nil
}

// describe fills the static part of the Env from device attributes.
func (b *Backend) describe() error {
	var err error
	b.env, b.maxThreadsPerSM, err = describeEnv(b.dev, b.drv, b.nvrtc, b.opts.Device)
	b.arch, b.nvrtcVersion = b.env.Arch, b.env.NVRTC
	return err
}

// deviceInfo is what describeEnv reads of a device (cuda.Device).
type deviceInfo interface {
	Name() (string, error)
	UUID() (string, error)
	TotalMem() (int64, error)
	Attr(cuda.DeviceAttr) (int, error)
}

// versioner is a library that reports its version (the driver, NVRTC).
type versioner interface {
	Version() (major, minor int, err error)
}

// describeEnv builds the static Env of device ordinal from its attributes
// and the driver's and NVRTC's versions, with the device's thread limit
// per SM. The architecture is sm_<major><minor> of the compute
// capability, the form NVRTC's -arch takes; clocks come in kHz.
func describeEnv(dev deviceInfo, drv, nvrtc versioner, ordinal int) (e results.Env, maxThreadsPerSM int, err error) {
	e.DeviceIndex = ordinal
	if e.Device, err = dev.Name(); err != nil {
		return e, 0, err
	}
	if e.UUID, err = dev.UUID(); err != nil {
		return e, 0, err
	}
	if e.MemBytes, err = dev.TotalMem(); err != nil {
		return e, 0, err
	}
	attr := map[cuda.DeviceAttr]int{}
	for _, a := range []cuda.DeviceAttr{
		cuda.AttrMultiprocessorCount, cuda.AttrL2CacheSize, cuda.AttrClockRate, cuda.AttrMemoryClockRate,
		cuda.AttrComputeCapabilityMajor, cuda.AttrComputeCapabilityMinor, cuda.AttrMaxThreadsPerMultiprocessor,
	} {
		if attr[a], err = dev.Attr(a); err != nil {
			return e, 0, err
		}
	}
	e.SMs = attr[cuda.AttrMultiprocessorCount]
	e.L2Bytes = int64(attr[cuda.AttrL2CacheSize])
	e.ClockMHz = float64(attr[cuda.AttrClockRate]) / 1000 // kHz
	e.MemClockMHz = float64(attr[cuda.AttrMemoryClockRate]) / 1000
	e.Arch = fmt.Sprintf("sm_%d%d", attr[cuda.AttrComputeCapabilityMajor], attr[cuda.AttrComputeCapabilityMinor])

	maj, min, err := drv.Version()
	if err != nil {
		return e, 0, err
	}
	e.Driver = fmt.Sprintf("%d.%d", maj, min)
	if maj, min, err = nvrtc.Version(); err != nil {
		return e, 0, err
	}
	e.NVRTC = fmt.Sprintf("%d.%d", maj, min)
	e.Host, _ = os.Hostname()
	e.Ktune = buildVersion()
	return e, attr[cuda.AttrMaxThreadsPerMultiprocessor], nil
}

// buildVersion names this ktune build (internal/buildinfo).
func buildVersion() string { return buildinfo.Read().Stamp() }

// NVRTCPath returns the file the runtime compiler was loaded from.
func (b *Backend) NVRTCPath() string { return b.nvrtc.Path() }

// Env describes the device. The first call measures the streaming read
// bandwidth (tenths of a second); later calls return the same Env.
func (b *Backend) Env(ctx context.Context) (results.Env, error) {
	if b.dead != nil {
		return b.env, fmt.Errorf("probe: device unusable after an earlier fault: %w", b.dead)
	}
	if !b.haveBW {
		bw, err := b.readBandwidth(ctx)
		if err != nil {
			if cuda.IsSticky(err) {
				b.dead = err
			}
			return b.env, fmt.Errorf("measuring the read bandwidth of %s: %w", b.env.Device, err)
		}
		b.env.ReadBWGBps = bw
		b.haveBW = true
		b.logf("%s (%s, %d SMs): streaming read %.0f GB/s", b.env.Device, b.arch, b.env.SMs, bw)
	}
	return b.env, nil
}

// Close releases everything the backend holds. After a sticky fault most
// of these calls fail; the context release at the end is what matters.
func (b *Backend) Close() error {
	for _, k := range b.loaded {
		b.gpu.unload(k)
	}
	b.loaded = nil
	if b.ws != nil {
		b.gpu.freeWorkspace(b.ws)
		b.ws = nil
	}
	if b.haveFlush {
		b.gpu.free(b.flush)
		b.haveFlush, b.flush = false, 0
	}
	if b.ctx == nil {
		return nil
	}
	if b.util != nil {
		if b.util.digestOut != 0 {
			b.ctx.Free(b.util.digestOut)
		}
		b.ctx.Free(b.util.grids)
		b.util.mod.Unload()
	}
	if b.scratch != 0 {
		b.ctx.Free(b.scratch)
	}
	if b.staging != nil {
		b.ctx.FreeHost(b.staging)
		b.staging = nil
	}
	if b.stagingDev != 0 {
		b.ctx.Free(b.stagingDev)
		b.stagingDev = 0
	}
	if b.hostFlags != nil {
		b.ctx.FreeHost(b.hostFlags)
	}
	for _, e := range []*cuda.Event{b.start, b.stop} {
		if e != nil {
			e.Destroy()
		}
	}
	if b.stream != nil {
		b.stream.Destroy()
	}
	err := b.ctx.Close()
	b.ctx = nil
	return err
}

func (b *Backend) logf(format string, args ...any) {
	fmt.Fprintf(b.log, "probe: "+format+"\n", args...)
}

// flag returns word i of the mapped host flags. The device reads them
// over PCIe while the host writes them, so every access is atomic: a plain
// store could be reordered or kept in a register by the compiler.
func (b *Backend) flag(i int) *uint32 {
	return (*uint32)(unsafe.Pointer(&b.hostFlags[4*i]))
}

func (b *Backend) releaseBlocker() { atomic.StoreUint32(b.flag(0), 1) }

var _ plan.Backend = (*Backend)(nil)

// utilSource is the measurement kernels' source as NVRTC gets it.
func utilSource() (plan.Source, error) {
	text, err := kernels.Read("util.cu")
	if err != nil {
		return plan.Source{}, fmt.Errorf("reading the embedded util.cu: %w", err)
	}
	return plan.Source{Name: "util.cu", Text: text}, nil
}
