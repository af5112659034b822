// Package results owns ktune's results format: an append-only JSONL file,
// one Record per measured point, each line self-describing (schema version,
// the point's configuration and hash, the device it ran on, gate verdicts
// with their evidence, raw samples and summaries).
//
// The format is specified here and only here. A line is one JSON object:
//
//	{"schema":1,"hash":"3f2a…","time":"2026-11-30T22:41:00Z",
//	 "config":{"spec":"slice","variant":"d2","kernel":"d2",
//	           "defines":[{"name":"NR","value":"4"},{"name":"SPLITS","value":"32"}],
//	           "shape":{"name":"7b","heads":28,"kv_heads":4,"head_dim":128,"kv_dtype":"f16","batch":1,"capacity":32768},
//	           "nkv":32768,"splits":32,"grid":[32,28,1],"block":[32,1,1],
//	           "combine_grid":[28,1,1],"combine_block":[128,1,1],"bitwise_with":"r4"},
//	 "env":{"device":"NVIDIA H200","sms":132,…,"read_bw_gbps":4560.1},
//	 "status":"ok",
//	 "compile":{…},"resources":[…],"gates":[…],
//	 "probes":[{"probe":"cold","samples_ns":[…],"summary":{…},…}]}
//
// Writers append and fsync one line per point; readers stream and report a
// malformed line as a *SyntaxError (file:line: msg) while keeping the rest.
//
// Further rules of the file:
//   - A sweep directory holds results.jsonl and .lock; one process at a
//     time appends (LockDir), and the lock file names it.
//   - A line is at most MaxLineBytes long: a longer one is no record, and
//     readers count and skip it without holding it (LineReader).
//   - A file kept gzip-compressed (.jsonl.gz) reads as its contents; a
//     compressed stream cut short is a read error, never a shorter file.
//   - Blank lines are ignored. A line without "schema" or without "hash" is
//     not a record; a record whose schema is larger than SchemaVersion is
//     refused by name, never half-read.
//   - The same hash may appear more than once (`ktune sweep --force`
//     re-measures): within one file the last line wins.
//   - A crash can only leave a truncated last line. Readers report it
//     ("truncated last line (a crash mid-write?)"); the next writer cuts it
//     off before appending, so that point runs again.
//   - Numbers are finite: JSON has no NaN or Inf, so Append refuses a record
//     holding one (the sweep then records the point as an error instead).
//   - Fields added within a schema version are optional and absent in
//     older lines: a probe's "energy" (Energy, carrying its own method
//     name, EnergyMethodNVML) came after "gate_suite".
package results

import (
	"time"

	"github.com/ktune/ktune/internal/abi"
	"github.com/ktune/ktune/internal/measure"
	"github.com/ktune/ktune/internal/stats"
)

// SchemaVersion is the version of the record layout written by this build.
// Readers refuse records with a larger version.
const SchemaVersion = 1

// Status is the outcome class of a point.
type Status string

const (
	StatusOK            Status = "ok"             // gates passed, probes measured
	StatusGateFailed    Status = "gate_failed"    // a gate failed; evidence in Gates, no timings
	StatusCompileFailed Status = "compile_failed" // NVRTC rejected the source; log in Compile.Log
	StatusFault         Status = "fault"          // a sticky CUDA error (illegal address, trap…)
	StatusTimeout       Status = "timeout"        // the point exceeded its time limit
	StatusOOM           Status = "oom"            // device memory could not be allocated
	StatusError         Status = "error"          // any other failure; text in Error
	// StatusOverBudget: a compiled kernel breaks the variant's resource
	// budget (max_registers, no_spills, max_shared); Error says how, the
	// numbers are in Resources, nothing ran.
	StatusOverBudget Status = "over_budget"
)

// Probe names a measurement method (measure.Probe).
type Probe = measure.Probe

// The probes, as the results format records them (measure's).
const (
	ProbeCold  = measure.Cold
	ProbeHot   = measure.Hot
	ProbeGraph = measure.Graph
)

// A Define is one compile-time -D definition, as the ABI names it
// (abi.Define); a record carries the point's defines sorted by name.
type Define = abi.Define

// Defines is a list of defines sorted by name (abi.Defines).
type Defines = abi.Defines

// A Shape is the attention problem shape (abi.Shape), recorded as the
// config's "shape": the results format records it and the ABI defines it.
type Shape = abi.Shape

// Config is everything that determines a point's result. Its hash (with the
// kernel sources, compile flags and architecture) is Record.Hash.
type Config struct {
	Spec    string  `json:"spec"`
	Variant string  `json:"variant"`
	Kernel  string  `json:"kernel"`  // built-in name or user .cu path as written in the spec
	Defines Defines `json:"defines"` // sorted by name
	Shape   Shape   `json:"shape"`
	NKV     int     `json:"nkv"`               // context length of every sequence (batch>1: the longest; see Lengths)
	Lengths []int   `json:"lengths,omitempty"` // per-sequence nkv when ragged
	Splits  int     `json:"splits"`            // the SPLITS define, for tables

	Grid         [3]int `json:"grid"`
	Block        [3]int `json:"block"`
	SharedBytes  int    `json:"shared_bytes,omitempty"` // dynamic shared memory of the partial kernel
	CombineGrid  [3]int `json:"combine_grid"`
	CombineBlock [3]int `json:"combine_block"`

	BitwiseWith string `json:"bitwise_with,omitempty"` // numerics class: byte-identical to this variant

	// Fixture marks every point of a fault-isolation spec (one with a
	// kernel under testdata): its good kernels run after a deliberate
	// fault under names no engine ships. The record carries the mark
	// itself, so that leaving the faulting kernels' records out of an
	// input does not make the others shippable (IsFixture).
	Fixture bool `json:"fixture,omitempty"`
}

// Define returns the value of the named define and whether it is set.
func (c *Config) Define(name string) (string, bool) {
	for _, d := range c.Defines {
		if d.Name == name {
			return d.Value, true
		}
	}
	return "", false
}

// Env describes the machine a record was measured on.
type Env struct {
	Device      string  `json:"device"`
	DeviceIndex int     `json:"device_index"`
	UUID        string  `json:"uuid,omitempty"`
	Arch        string  `json:"arch"` // e.g. "sm_90"
	SMs         int     `json:"sms"`
	L2Bytes     int64   `json:"l2_bytes"`
	MemBytes    int64   `json:"mem_bytes"`
	Driver      string  `json:"driver"`        // cuDriverGetVersion, e.g. "13.0"
	NVRTC       string  `json:"nvrtc"`         // nvrtcVersion, e.g. "13.0"
	ClockMHz    float64 `json:"clock_mhz"`     // default SM clock (device attribute)
	MemClockMHz float64 `json:"mem_clock_mhz"` // memory clock (device attribute)
	// ReadBWGBps is the streaming read bandwidth measured once per run by a
	// float4 read kernel over a buffer far larger than L2 (GB/s, 1e9 B/s).
	ReadBWGBps float64 `json:"read_bw_gbps"`
	Host       string  `json:"host,omitempty"`
	Ktune      string  `json:"ktune,omitempty"` // ktune build: version+revision[-dirty], e.g. "(devel)+2244491a3b1c-dirty" (internal/buildinfo)
}

// Compile records how the point's kernels were built.
type Compile struct {
	Seconds float64  `json:"seconds"`
	Cached  bool     `json:"cached"`
	Flags   []string `json:"flags,omitempty"`
	Log     string   `json:"log,omitempty"` // NVRTC log, kept even on success
	// Artifact names a prebuilt kernel loaded as it is, without NVRTC:
	// "ptx sha256:<hex>" (or cubin, fatbin), the digest of the very file.
	Artifact string `json:"artifact,omitempty"`
	// Symbols maps each entry of a prebuilt artifact written as its C++
	// name in the spec to its symbol in the file (the name the records'
	// resources carry is the C++ one).
	Symbols map[string]string `json:"symbols,omitempty"`
}

// Resource is the compiled footprint of one kernel entry point.
type Resource struct {
	Kernel         string  `json:"kernel"` // entry point name
	Registers      int     `json:"registers"`
	LocalBytes     int     `json:"local_bytes"` // stack/spill per thread; >0 is flagged
	StaticShared   int     `json:"static_shared"`
	DynamicShared  int     `json:"dynamic_shared"`
	MaxBlocksPerSM int     `json:"max_blocks_per_sm"`
	Occupancy      float64 `json:"occupancy"` // theoretical, 0..1
	// LoadsBeforeChain is the number of global loads in the main loop issued
	// before its first SHFL or MUFU (SASS), -1 when no SASS was available.
	LoadsBeforeChain int `json:"loads_before_chain"`
}

// A GateKind names what a gate checks (Gate.Kind).
type GateKind string

// Gate kinds: the verdicts records carry. Which checks a point runs, in
// which order, is the gates' registry (probe/gate.Registry).
const (
	GateTolerance GateKind = "tolerance" // vs the float64 CPU oracle
	GateBitwise   GateKind = "bitwise"   // memcmp against the bitwise_with twin
	GateReplay    GateKind = "replay"    // CUDA-graph replay at other nkv equals a fresh launch and the oracle
	GateWritten   GateKind = "written"   // every output element written (poison check)
	// GateDeterminism: the same launch twice gives the same bytes (a race
	// or an atomic summation order shows here).
	GateDeterminism GateKind = "determinism"
	// GateFresh: a freshly loaded module gives the bytes of the module that
	// already ran (state kept in __device__ memory between launches).
	GateFresh GateKind = "fresh"
	// GateReadOnly: every buffer the kernel only reads (q, K, V, the
	// lengths, the scales) holds its uploaded bytes after every gate launch
	// and after the timing probes; Buffer names the one that changed and
	// FirstDiff its first changed byte.
	GateReadOnly GateKind = "readonly"
	// GateGuard: the canaries in the guard regions before and after every
	// buffer are intact after every gate launch and after the timing probes
	// (a write out of bounds); FirstDiff is the byte offset from the
	// buffer's start, negative before it.
	GateGuard GateKind = "guard"
	// GateBounds: one launch at nkv equal to the capacity with every
	// read-only buffer ending against unmapped address space ran without a
	// fault (a read past the end).
	GateBounds GateKind = "bounds"
	// GateStale: rows past each sequence's length hold NaN, Inf and large
	// finite values, as an engine's cache holds stale pages; the output
	// must be the bytes of the same launch over finite rows. Where the
	// spec declares its engine's cache finite past each length, they hold
	// large finite values alone, and the gate's Waiver says so.
	GateStale GateKind = "stale"
	// GateTimed: what the timed launches computed: after each timing probe
	// the last timed launch's outputs are all written and equal a fresh
	// launch's on the same module (a kernel that changes with the launch
	// count, or serves repeated launches from a memo).
	GateTimed GateKind = "timed"
	// GateSanitizer: compute-sanitizer (memcheck, racecheck, synccheck,
	// initcheck) found no error in one gate point of the compiled kernel.
	GateSanitizer GateKind = "sanitizer"
	// GateLaunches: the outputs of launches sampled across the timed
	// probes, and of a run of thousands of launches of one module, equal
	// a fresh module's on the same inputs (device state that corrupts one
	// launch in N: a counter that wraps, a ring re-armed only sometimes).
	GateLaunches GateKind = "launches"
	// GateInvariance (opt-in: the variant's invariant key): a probe
	// sequence's out rows (and a declared lse) are the same bytes alone at
	// batch 1, inside batches of other sizes and compositions, at every
	// position and under every dispatch arm that could serve it; Detail
	// names the sequence, the two contexts and the first differing
	// element.
	// A pass's Detail begins with the kinds checked, then a colon
	// (Gate.InvariantIn).
	GateInvariance GateKind = "invariance"
)

// A Gate is one verdict with its evidence.
type Gate struct {
	Kind GateKind `json:"kind"`
	NKV  int      `json:"nkv"`
	Pass bool     `json:"pass"`
	Seed uint64   `json:"seed"`
	Twin string   `json:"twin,omitempty"` // bitwise: the twin variant
	// Tolerance evidence.
	MaxAbs float64 `json:"max_abs,omitempty"`
	MaxRel float64 `json:"max_rel,omitempty"`
	NMSE   float64 `json:"nmse,omitempty"`
	NaNs   int     `json:"nans,omitempty"`
	// Bitwise/replay evidence.
	DiffBytes int    `json:"diff_bytes,omitempty"`
	FirstDiff int    `json:"first_diff,omitempty"` // byte index of the first difference, -1 if none
	Buffer    string `json:"buffer,omitempty"`     // "partial" or "out"
	Detail    string `json:"detail,omitempty"`
	// Inputs names the oracle input set the gate ran on (oracle.InputSet:
	// uniform, peaked, large, subnormal, outliers); empty in records
	// written before there was more than one.
	Inputs string `json:"inputs,omitempty"`
	// Waiver is the spec's decision this gate was judged under (bounds of
	// the input set's own, or, on a stale gate, the engine's cache
	// declared finite past each length: no NaN or Inf written there;
	// with the reason), empty for none.
	Waiver string `json:"waiver,omitempty"`
}

// A Summary is a probe's order statistics (stats.Summary), recorded
// beside the samples.
type Summary = stats.Summary

// A Measurement is one probe's samples at one point.
type Measurement struct {
	Probe     Probe     `json:"probe"`
	SamplesNS []float64 `json:"samples_ns"` // time per partial+combine launch pair
	Summary   Summary   `json:"summary"`
	// Converged is false when the time budget ran out before the noise
	// bound was met; Note then says so.
	Converged bool    `json:"converged"`
	Note      string  `json:"note,omitempty"`
	Bytes     int64   `json:"bytes"`               // K+V bytes the point must read once
	GBps      float64 `json:"gbps"`                // Bytes / median
	PctBW     float64 `json:"pct_bw"`              // GBps / Env.ReadBWGBps * 100
	ClockMHz  float64 `json:"clock_mhz,omitempty"` // SM clock sampled during the probe
	Throttled int     `json:"throttled,omitempty"` // samples taken below 75% of the default clock
	Batch     int     `json:"batch,omitempty"`     // launches per sample (hot, graph)
	// Energy is the board's energy per decode step, read around a window
	// of this probe's steps; nil in records written before it was kept,
	// on a machine without NVML, and for the cold probe (below).
	Energy *Energy `json:"energy,omitempty"`
}

// EnergyMethodNVML names the one way ktune measures energy so far: the
// difference of two reads of NVML's total energy counter
// (nvmlDeviceGetTotalEnergyConsumption, mJ) around a window of the probe's
// launches run back to back, the device synchronized at both ends, with
// the board power (nvmlDeviceGetPowerUsage, mW) read at both ends. A
// change of method gets a new name, so that numbers of two methods are
// never compared as one.
const EnergyMethodNVML = "nvml-total-energy/1"

// An Energy is one probe's energy per decode step at a point.
//
// The counter counts whole millijoules and is updated only every
// CounterPeriodNS (measured once per run: NVML does not document it), so
// each read can lag the board by up to one period of energy, and the
// difference of two reads is uncertain by up to P·period + 1 mJ at power
// P. The window is made long enough for that bound to be 4.5% of the
// energy it measures, NeededNS = (period + 1 mJ / P) / 0.045, P the board
// power before the window (4.5%, so that a window drawing less than that
// power still keeps within 5%). Where that is longer than the run allows, no
// window is run and Unmeasurable says so; where the window ran, RelBound
// is the bound over the measured energy, and a bound over 5% is
// unmeasurable too. UJPerStep is set only when measurable.
//
// The hot and graph probes carry one (their steps run back to back, as in
// the window); the cold probe does not: each of its steps follows an L2
// flush whose energy the counter cannot tell from the step's.
type Energy struct {
	Method string `json:"method"` // EnergyMethodNVML
	// Steps are the launch pairs (decode steps) run in the window.
	Steps int `json:"steps"`
	// WindowNS is host time from the first counter read to the last, the
	// stream drained at both.
	WindowNS float64 `json:"window_ns"`
	// EnergyMJ is the counter's difference over the window.
	EnergyMJ float64 `json:"energy_mj"`
	// UJPerStep is 1000 × EnergyMJ / Steps, the board's energy per step
	// (static power included); absent when Unmeasurable is set.
	UJPerStep float64 `json:"uj_per_step,omitempty"`
	// PowerBeforeMW and PowerAfterMW are the board power read before and
	// after the window (NVML averages it over a second on this class of
	// board); 0 when the board does not report it.
	PowerBeforeMW float64 `json:"power_before_mw,omitempty"`
	PowerAfterMW  float64 `json:"power_after_mw,omitempty"`
	// CounterPeriodNS is the counter's update period measured in this run.
	CounterPeriodNS float64 `json:"counter_period_ns"`
	// NeededNS is the window the counter's resolution requires at the
	// measured power for a 4.5% bound.
	NeededNS float64 `json:"needed_ns"`
	// RelBound is (P·period + 1 mJ) / EnergyMJ with P = EnergyMJ /
	// WindowNS: the largest relative error the counter's resolution
	// allows; 0 when no window ran.
	RelBound float64 `json:"rel_bound,omitempty"`
	// Unmeasurable says why the counter cannot give this probe's energy
	// per step (the window it needs is longer than allowed, the counter
	// did not move, a read failed); empty when UJPerStep holds it.
	Unmeasurable string `json:"unmeasurable,omitempty"`
}

// A Record is one line of a results file.
type Record struct {
	Schema    int        `json:"schema"`
	Hash      string     `json:"hash"`
	Time      time.Time  `json:"time"`
	Config    Config     `json:"config"`
	Env       Env        `json:"env"`
	Status    Status     `json:"status"`
	Error     string     `json:"error,omitempty"`
	Compile   Compile    `json:"compile"`
	Resources []Resource `json:"resources,omitempty"`
	Gates     []Gate     `json:"gates,omitempty"`
	// Waivers are the spec's decisions that the gates applied: about
	// single input sets (an input set's own bounds, or a set that does
	// not apply, each with its reason), and a gate the spec's launch mode
	// leaves out (graph: never: no replay gate, plan.NeverCapturedText),
	// and the engine's cache declared finite past each length (the stale
	// gate wrote no NaN or Inf there).
	// A verdict reached under one says so (gate's numerics, report.md's
	// Waivers).
	Waivers []string      `json:"waivers,omitempty"`
	Probes  []Measurement `json:"probes,omitempty"`
	WallSec float64       `json:"wall_sec"` // time spent on this point, compile included
	// GateSec is the time the gates took on this point; a point whose
	// compiled kernel was already gated copies the verdict and shows ~0, so
	// the sum over a file is the gate cost per compiled kernel.
	GateSec float64 `json:"gate_sec,omitempty"`
	// GateCost splits GateSec by where the time went; nil in records
	// written before it was kept.
	GateCost *GateCost `json:"gate_cost,omitempty"`
	// Landed marks the configuration the engine ships today (the spec's
	// landed variant and defines): the baseline of every comparison.
	Landed bool `json:"landed,omitempty"`
	// Replayed is set on a record that the replay backend served from
	// recorded results instead of measuring (a dry run, a pipeline test
	// on a machine without a GPU): its numbers are another run's, or
	// there are none. report, gate, compare and tune refuse such records
	// unless asked (see Measured).
	Replayed *Replay `json:"replayed,omitempty"`
	// GateSuite names the gate suite the record's gates ran under
	// (probe/gate.Suite); empty in records written before it was recorded.
	// A resumed sweep runs a point again whose record names another.
	GateSuite string `json:"gate_suite,omitempty"`
}

// A GateCost is where a point's gate time went, in seconds: the host
// drawing and deriving the inputs, the float64 oracle, the uploads to the
// device, the device's work (launches, waits on the stream, read-backs,
// the read-only checks' digests, allocations), and the host's
// comparisons and bookkeeping between them. The five add up to the
// record's gate_sec.
type GateCost struct {
	Inputs float64 `json:"inputs_sec"`
	Oracle float64 `json:"oracle_sec"`
	Upload float64 `json:"upload_sec"`
	Device float64 `json:"device_sec"`
	Host   float64 `json:"host_sec"`
}

// A Replay says where a replayed record's content came from.
type Replay struct {
	// Match is how the point found its record.
	Match ReplayMatch `json:"match"`
	// Hash is the hash of the record replayed, which differs from the
	// point's own when Match is ReplayConfig; empty for ReplayNone.
	Hash string `json:"hash,omitempty"`
}

// ReplayMatch is how the replay backend found a point's record.
type ReplayMatch string

const (
	// ReplayHash: a record of the point's own hash, so measured with the
	// same sources, flags, architecture and settings.
	ReplayHash ReplayMatch = "hash"
	// ReplayConfig: a record of the same variant, kernel, defines, shape
	// and nkv under another hash (the kernel sources or the settings have
	// changed since it was measured), served only when asked for.
	ReplayConfig ReplayMatch = "config"
	// ReplayNone: no record; the record has StatusError and no numbers.
	ReplayNone ReplayMatch = "none"
)

// Probe returns the measurement of the named probe, or nil.
func (r *Record) Probe(p Probe) *Measurement {
	for i := range r.Probes {
		if r.Probes[i].Probe == p {
			return &r.Probes[i]
		}
	}
	return nil
}

// GatesPass reports whether every gate of the record passed.
func (r *Record) GatesPass() bool {
	for _, g := range r.Gates {
		if !g.Pass {
			return false
		}
	}
	return true
}
