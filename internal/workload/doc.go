// Package workload owns what an engine's traffic looks like to ktune and
// what a kernel costs under it: a workload is a set of buckets (batch
// size, context length, weight), read from ktune's own file or imported
// from the forms engines already produce, and Evaluate turns per-point
// timing samples of a candidate and a baseline into the expected
// attention time of one decode step under that traffic, with intervals,
// and the buckets where the candidate regresses although the total
// improves. It sits below verdict and report and knows nothing of either:
// its inputs are samples by (batch, nkv).
//
// # The workload file
//
// A workload file is YAML, version 1:
//
//	workload: 1                  # the format's version (required)
//	name: chat-7b                # optional; names the workload in outputs
//	buckets:                     # one per (batch, nkv); weights need not sum to 1
//	  - {batch: 1, nkv: 32768, weight: 60}
//	  - {batch: 1, nkv: 8192, weight: 30}
//	  - {batch: 1, nkv: 512, weight: 2, label: "short chats"}
//
// batch is the number of sequences one decode call attends for (the
// shape's batch), nkv the context length of each (ktune's nkv: the longest
// of a ragged batch), weight how often such a step occurs (a count or a
// share: weights are normalised to sum to 1). Two buckets with the same
// batch and nkv are one bucket (weights add). A weight must be finite
// and ≥ 0 and at least one must be positive.
//
// # Importers
//
// Load picks the form by the file name:
//
//   - *.yaml, *.yml: the workload file above.
//   - *.csv: a histogram with a header row naming its columns: batch (or
//     batch_size), nkv (or context, context_len, kv_len, seq_len) and
//     weight (or count); other columns are ignored.
//   - *.jsonl: a FlashInfer-Bench trace of decode calls: one JSON object
//     a line, {"definition": "gqa_paged_decode_…_ps16", "workload":
//     {"axes": {"batch_size": B, "num_kv_indices": P, …}, …}}; every line
//     whose definition starts with "gqa_paged_decode" is one call of
//     weight 1, with nkv = ⌈P · page_size / B⌉, the mean context of the
//     batch (a trace records the page count, not each sequence's length;
//     page_size is the definition's "_ps" suffix). Other lines are
//     counted and skipped.
//   - *.txt, *.batchspec: vLLM's attention-benchmark batch specifications,
//     one a line, optionally followed by a weight ("2q2k_32q1s1k 5"):
//     underscore-separated segments (count)q(q_len)[k][s(seq_len)[k]],
//     a k multiplying by 1024. Decode rows (q_len 1) count: a line is one
//     step of batch = the decode rows and nkv = their longest seq_len;
//     prefill and extend rows are not decode attention and are dropped
//     (counted in Notes). A line without decode rows is skipped.
//
// Blank lines and lines starting with # are ignored in the line forms.
// A mistake is reported as file:line: message.
//
// # Expected time and its interval
//
// For each bucket the time of a side is its median at the bucket's
// (batch, nkv) when that point was measured; between two measured nkv of
// the batch it is interpolated linearly in nkv (decode time grows about
// linearly with the context) and the bucket says so; beyond the measured
// range, or at a batch never measured, the bucket is refused (Refused),
// never extrapolated. The expected step time is Σ weight · time. Its 95%
// interval, and that of every ratio, come from a bootstrap of the
// per-point samples: each measured point's samples are resampled with
// replacement, the medians recomputed and the sums formed again, 2000
// times with a fixed seed (so that the same samples give the same
// interval); the interval is the 2.5th to 97.5th percentile of the
// replicates.
package workload
