// Package report turns results records into decisions: it builds one plain
// data model (rows per shape, variant, configuration and context length,
// the environments, gate failures with their evidence, what to ship) and
// renders it as a terminal report, Markdown, CSV, JSON and plots, so that
// every output agrees. It also compares two results files point by point,
// exports them in the Go benchmark format and decides whether a candidate
// kernel may land.
//
// Report never measures anything and never reaches back to the sweep: its
// only input is []results.Record.
//
// # Shapes
//
// A shape is identified by every field but its label: heads, KV heads,
// head_dim, the K/V dtype, the batch and the capacity. Records of another
// tool that label the same problem differently line up; two problems that
// share a label are kept apart and named apart ("7b-b1", "7b-b16",
// "7b-cap8192"), in tables, sections and plot file names alike.
//
// # What to ship
//
// Per device, shape and measured nkv, the shipped configuration is the
// one with the lowest cold median among the records that passed every
// gate and are neither references nor fixtures:
//
//   - a reference is a kernel ktune did not build (kernel "torch", or no
//     launch grid and no NVRTC version): PyTorch's SDPA written in the
//     results format by experiments/sdpa_ref.py;
//   - a fixture is any record of a spec with a kernel under a testdata
//     directory: the fault-isolation runs, whose good kernels only show
//     that a worker recovered.
//
// Contiguous measured nkv with the same winner form a range. At each nkv
// the winner is compared with the landed kernel (its fastest
// configuration there) and with every reference measured there: the
// ratio of medians with the 95% confidence interval that inverts the
// Mann-Whitney U test, and the test's p-value (stats.Compare, the one
// comparison engine compare and gate use too). The
// summary names the results files holding the winners in a `ktune tune
// --from` command, which turns them into a dispatch table with its own
// significance rules (internal/dispatch).
//
// # The JSON document
//
// `ktune report --json` writes a Document (schema version
// DocumentSchema), indented. An excerpt of testdata/report.json.golden
// (the slice experiment at nkv 512 and 32768, --layers 28 --step-ms 12;
// numbers rounded, "…" for what is left out):
//
//	{
//	  "schema": 1,
//	  "probes": ["cold", "hot"],
//	  "environments": [{"device": "NVIDIA H200", "arch": "sm_90", "sms": 132, …,
//	                    "read_bw_gbps": 4407.8, "host": "vm", "ktune": "(devel)",
//	                    "runs": 1, "records": 16, "hosts": ["vm"], "builds": ["(devel)"],
//	                    "read_bw_min_gbps": 4407.8, "read_bw_max_gbps": 4407.8}],
//	  "ship": [{"device": "NVIDIA H200", "shape": "7b", "dims": {"name": "7b", "heads": 28, …},
//	            "probe": "cold", "landed": "d2 SPLITS=32 NR=4",
//	            "ranges": [{"min_nkv": 512, "max_nkv": 32768, "config": "r4 SPLITS=64 NR=4",
//	                        "variant": "r4", "landed": false,
//	                        "points": [{"nkv": 512,
//	                                    "median_ns": {"center": 16080.0, "lo": 15968.0, "hi": 16160.0},
//	                                    "n": 10,
//	                                    "versus": [{"against": "landed", "config": "d2 SPLITS=32 NR=4",
//	                                                "reference": false,
//	                                                "ratio": {"center": 1.085, "lo": 1.071, "hi": 1.092},
//	                                                "p": 1.08e-05, "significant": true, "decidable": true}]}, …]}],
//	            "command": "ktune tune --from RESULTS -o out/dispatch/7b"}],
//	  "rows": [{"device": "NVIDIA H200", "shape": "7b", "dims": {…}, "variant": "d2", "kernel": "d2",
//	            "config": "d2 SPLITS=32 NR=4", "splits": 32, "defines": "NR=4", "nkv": 512,
//	            "landed": true, "reference": false, "fixture": false, "status": "ok",
//	            "verdict": "ok", "registers": 56, "local_bytes": 0, "occupancy": 0.5,
//	            "probes": [{"probe": "cold", "n": 10, "median_ns": 17440.0, "q1_ns": 17280.0,
//	                        "q3_ns": 17464.0, "min_ns": 17248.0, "max_ns": 18432.0,
//	                        "bytes": 1048576, "gbps": 60.12, "pct_bw": 1.364, "speedup": 1,
//	                        "throttled": 0, "converged": true,
//	                        "uj_per_step": 1234.5}, …]}, …],
//	  "failures": [],
//	  "projection": {"layers": 28, "step_ms": 12, "probe": "hot",
//	                 "rows": [{"device": "NVIDIA H200", "shape": "7b", "nkv": 512,
//	                           "config": "d2 SPLITS=32 NR=4", "kernel_us": 12.51, "landed_us": 12.51,
//	                           "rest_ms": 11.65, "delta_step_ms": 0, "tokens_per_sec": 83.33,
//	                           "landed_tokens_per_sec": 83.33}, …],
//	                 "refused": ["7b nkv=32768: 28 layers × 552.2 µs landed (hot) = 15.5 ms > the 12 ms step"]},
//	  "warnings": [{"kind": "projection refused", "count": 1, "example": "7b nkv=32768: …",
//	                "meaning": "the landed kernel's attention time × layers exceeds the step time …"}]
//	}
//
// A document written with -o also lists "plots": kind, device, shape,
// title, files (relative to the report directory) and series. With
// several input files, "sources" names the files of the shipped
// configurations and "command" uses them.
//
// Every field is documented on the Go type that holds it (Document,
// EnvGroup, ShipShape, ShipRange, ShipPoint, Speedup, CI, DocRow,
// DocProbe, DocFailure, Projection, DocPlot, WarningSummary). Times are
// in ns unless a field's name says otherwise. DocumentSchema changes when
// a field is removed or changes meaning; fields may be added without a
// change, so readers should ignore fields they do not know. testdata/
// report.json.golden is a complete document of the slice experiment.
//
// # Writing a report directory
//
// WriteDir renders into a temporary directory beside the target and
// moves each file into place only once all are complete; report.md and
// the manifest (.ktune-report, the names written) go last. Files an
// earlier report wrote and this one does not are removed; no other file
// of the directory is touched.
package report
