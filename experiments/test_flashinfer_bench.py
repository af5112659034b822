"""The pure parts of flashinfer_bench.py against the spec they stand in
for: BatchDecodeParams' layout and values against
engines/h200-flashinfer.yaml's structs (laid out by internal/spec/doc.go's
rules: natural alignment, a nested struct as aligned as its largest
member), fast_mod_div against division and internal/expr's known values,
the planned arrays and the launch geometry against the spec's
expressions, the mangled entries against ktune check's log, and
FlashInfer's event-timing method against a fake clock. No GPU, no torch."""

import ctypes
import math
import os
import random
import re
import struct
import unittest

import yaml

import flashinfer_bench as fb

HERE = os.path.dirname(os.path.abspath(__file__))
SPEC = os.path.join(HERE, "engines", "h200-flashinfer.yaml")
CHECK_LOG = os.path.join(HERE, "results", "h200", "flashinfer-decode", "h100-check.log")

# The spec's vocabulary as the structs use it (internal/abi/table.go):
# buffers are pointers; these scalars' default C types.
BUFFERS = {"q", "out", "lse", "k", "v", "page_indices", "page_indptr", "last_page_len"}
SCALARS = {"head_dim": "i32", "heads": "i32", "kv_heads": "i32", "batch": "i32", "window_left": "i32",
           "softcap": "f32", "scale": "f32"}
TYPES = {"i32", "u32", "i64", "u64", "f32", "u8"}
SIZE = {"ptr": 8, "i64": 8, "u64": 8, "i32": 4, "u32": 4, "f32": 4, "u8": 1}
CTYPE = {ctypes.c_void_p: "ptr", ctypes.c_int32: "i32", ctypes.c_uint32: "u32", ctypes.c_float: "f32",
         ctypes.c_uint8: "u8"}


def load_spec():
    with open(SPEC, encoding="utf-8") as f:
        return yaml.safe_load(f)


def variants():
    """(form, layout, variant) of every variant in the spec."""
    out = []
    for v in load_spec()["variants"]:
        form = "split" if "-split-" in v["name"] else "planned" if "-planned-" in v["name"] else "single"
        out.append((form, v["io"]["page_order"], v))
    return out


def arg_type(arg):
    """The C type of a struct field's arg, by the spec's rules."""
    if arg is None:
        return "ptr"
    head, sep, tail = arg.partition(":")
    if sep:
        if head in TYPES:
            return head  # TYPE:VALUE
        if head in ("planned", "scratch"):
            return "ptr"
        return tail  # name:TYPE
    if arg in BUFFERS:
        return "ptr"
    return SCALARS[arg]


def spec_layout(structs, name):
    """[(field, offset, type or nested layout)], size, align of a spec
    struct: each field at the next multiple of its natural alignment."""
    fields, end, align = [], 0, 1
    for f in structs[name]["fields"]:
        if "struct" in f:
            sub = spec_layout(structs, f["struct"])
            size, a, kind = sub[1], sub[2], sub
        else:
            kind = arg_type(f.get("arg"))
            size = a = SIZE[kind]
        self_off = f.get("offset", (end + a - 1) // a * a)
        fields.append((f["name"], self_off, kind))
        end, align = self_off + size, max(align, a)
    size = structs[name].get("size", (end + align - 1) // align * align)
    return fields, size, align


def c_env(form, heads, kv_heads, batch, page, capacity=fb.CAPACITY, chunk=fb.CHUNK, sms=132):
    env = {"sms": sms, "heads": heads, "kv_heads": kv_heads, "head_dim": fb.HEAD_DIM, "batch": batch, "group": heads // kv_heads,
           "capacity": capacity, "page_size": page, "cdiv": fb.cdiv, "min": min, "max": max,
           "fmd_mul": lambda d: fb.fast_mod_div(d)[0], "fmd_add": lambda d: fb.fast_mod_div(d)[1],
           "fmd_shift": lambda d: fb.fast_mod_div(d)[2]}
    if form == "split":
        env["CHUNK"] = chunk
    if form == "planned":
        env["PAGE_SIZE"] = page
    return env


def c_eval(expr, env):
    """A spec expression over positive integers: C's / truncates."""
    return eval(str(expr).replace("/", "//"), {"__builtins__": {}}, env)


def f32(x):
    return struct.unpack("<f", struct.pack("<f", x))[0]


def c_strides(shape):
    out, acc = [], 1
    for n in reversed(shape):
        out.append(acc)
        acc *= n
    return list(reversed(out))


class TestLayout(unittest.TestCase):
    def check(self, cstruct, layout, path):
        fields, size, align = layout
        self.assertEqual([n for n, _ in cstruct._fields_], [n for n, _, _ in fields], path)
        for (name, ctype), (_, off, kind) in zip(cstruct._fields_, fields):
            self.assertEqual(getattr(cstruct, name).offset, off, "%s.%s" % (path, name))
            if isinstance(kind, tuple):
                self.check(ctype, kind, path + "." + name)
            else:
                self.assertEqual(CTYPE[ctype], kind, "%s.%s" % (path, name))
        self.assertEqual(ctypes.sizeof(cstruct), size, path)
        self.assertEqual(ctypes.alignment(cstruct), align, path)

    def test_params_layout_is_the_specs(self):
        # Every variant declares the same struct; each is checked, so a
        # variant edited alone is caught.
        for form, layout, v in variants():
            self.check(fb.BatchDecodeParams, spec_layout(v["structs"], "params"), v["name"])

    def test_known_offsets(self):
        # Worked by hand: fast_mod_div 16 B, uint_fastdiv 20, paged_kv_t
        # 104 (k_data at 56), params 232 (paged_kv at 16, the planned
        # pointers from 184, partition_kv at 224).
        self.assertEqual(ctypes.sizeof(fb.FastModDiv), 16)
        self.assertEqual(ctypes.sizeof(fb.UintFastdiv), 20)
        self.assertEqual(fb.PagedKV.k_data.offset, 56)
        self.assertEqual(ctypes.sizeof(fb.PagedKV), 104)
        self.assertEqual(fb.BatchDecodeParams.paged_kv.offset, 16)
        self.assertEqual(fb.BatchDecodeParams.request_indices.offset, 184)
        self.assertEqual(fb.BatchDecodeParams.partition_kv.offset, 224)
        self.assertEqual(ctypes.sizeof(fb.BatchDecodeParams), 232)


class TestParamValues(unittest.TestCase):
    """Every leaf of the built struct holds what the spec passes there."""

    def expected(self, arg, env, addr, strides):
        if arg is None:
            return 0
        head, sep, tail = arg.partition(":")
        if sep and head in TYPES:
            x = c_eval(tail, env)
            return f32(x) if head == "f32" else x
        if sep and head in ("planned", "scratch"):
            return addr[arg]
        name = head
        if name in addr:
            return addr[name]
        if name in strides:
            return strides[name]
        return {"window_left": -1, "softcap": 0.0, "scale": f32(1 / math.sqrt(fb.HEAD_DIM))}.get(name, env.get(name))

    def walk(self, obj, structs, name, env, addr, strides, path):
        for f in structs[name]["fields"]:
            got = getattr(obj, f["name"])
            if "struct" in f:
                self.walk(got, structs, f["struct"], env, addr, strides, path + "." + f["name"])
                continue
            want = self.expected(f.get("arg"), env, addr, strides)
            self.assertIsNotNone(want, "%s.%s: no expected value" % (path, f["name"]))
            if isinstance(got, float):
                got = f32(got)
            self.assertEqual(got or 0, want, "%s.%s (%s)" % (path, f["name"], f.get("arg")))

    def test_values(self):
        names = sorted(BUFFERS) + ["planned:" + n for n in ("request_indices", "kv_tile_indices", "o_indptr",
                                                             "kv_chunk_size", "block_valid_mask")] + [
            "scratch:tmp_v", "scratch:tmp_s"]
        addr = {n: 0x7f0000000000 + 0x1000 * (i + 1) for i, n in enumerate(names)}
        for form, layout, v in variants():
            for heads, kv_heads in ((32, 8), (64, 8)):
                for batch, sms in ((1, 132), (16, 132), (16, 114)):
                    for page in (1, 7, 16, 64):
                        env = c_env(form, heads, kv_heads, batch, page, sms=sms)
                        # The strides from the pool the script allocates:
                        # C-contiguous pool_shape.
                        shape = fb.pool_shape(layout, 3, page, kv_heads, fb.HEAD_DIM)
                        cs = c_strides(shape)
                        row_dim, head_dim_ = (1, 2) if layout == "nhd" else (2, 1)
                        strides = {"kv_page_stride": cs[0], "kv_row_stride": cs[row_dim], "kv_head_stride": cs[head_dim_]}
                        p = fb.build_params(form, layout, heads, kv_heads, fb.HEAD_DIM, batch, fb.CAPACITY, page, addr, sms)
                        self.walk(p, v["structs"], "params", env, addr, strides,
                                  "%s %d/%d b%d p%d sms %d" % (v["name"], heads, kv_heads, batch, page, sms))

    def test_null_where_the_spec_passes_null(self):
        # The single pass passes no o_indptr or mask; a pointer there would
        # not fault, so the walk above is what guards it; here the split
        # form's differ, so the two forms cannot be swapped silently.
        addr = {n: 1 for n in list(BUFFERS) + ["planned:request_indices", "planned:kv_tile_indices",
                                               "planned:kv_chunk_size"]}
        addr.update({"planned:o_indptr": 2, "planned:block_valid_mask": 3, "scratch:tmp_v": 4, "scratch:tmp_s": 5})
        s = fb.build_params("single", "nhd", 32, 8, 128, 16, 32768, 16, addr, 132)
        self.assertIsNone(s.o_indptr)
        self.assertIsNone(s.block_valid_mask)
        self.assertEqual((s.partition_kv, s.padded_batch_size), (0, 16))
        t = fb.build_params("split", "nhd", 32, 8, 128, 16, 32768, 16, addr, 132)
        self.assertEqual((t.o, t.lse, t.o_indptr, t.block_valid_mask), (4, 5, 2, 3))
        self.assertEqual((t.partition_kv, t.padded_batch_size), (1, 16 * 64))


class TestFastModDiv(unittest.TestCase):
    def test_known(self):
        # internal/expr/hostfuncs_test.go's values.
        self.assertEqual(fb.fast_mod_div(16), (0, 0, 4))
        self.assertEqual(fb.fast_mod_div(7), (2454267026, 1, 2))
        self.assertEqual(fb.fast_mod_div(3), (2863311531, 0, 1))

    def test_divides_exactly(self):
        r = random.Random(5)
        ds = list(range(1, 2049)) + [(1 << k) + e for k in range(12, 32) for e in (-1, 0, 1)] + [
            r.randrange(1, 1 << 32) for _ in range(300)]
        top = (1 << 32) - 1
        for d in ds:
            mul, add, shift = fb.fast_mod_div(d)
            for n in [0, 1, d - 1, d, d + 1, 2 * d - 1, top, top - 1, 1 << 31, (1 << 31) - 1] + [
                    r.randrange(0, 1 << 32) for _ in range(8)]:
                if n > top:
                    continue
                self.assertEqual(fb.fast_mod_div_quotient(n, mul, add, shift), n // d, "n %d d %d" % (n, d))

    def test_refuses_zero(self):
        with self.assertRaises(ValueError):
            fb.fast_mod_div(0)


class TestPlanned(unittest.TestCase):
    def generate(self, decl, env, batch):
        """The spec's planned kinds, read from the YAML."""
        if "per_seq" in decl:
            return [c_eval(decl["per_seq"], dict(env, i=i)) for i in range(batch)]
        if "prefix" in decl:
            out = [0]
            for i in range(batch):
                out.append(out[-1] + c_eval(decl["prefix"], dict(env, i=i)))
            return out
        out = []
        for i in range(batch):
            for j in range(c_eval(decl["expand"], dict(env, i=i))):
                out.append(c_eval(decl["value"], dict(env, i=i, j=j)))
        n = c_eval(decl["length"], env)
        return out + [decl.get("pad", 0)] * (n - len(out))

    def test_against_the_spec(self):
        for form, layout, v in variants():
            for batch, sms in ((1, 132), (3, 132), (16, 132), (1, 114), (16, 114)):
                for nkv in (1, 511, 512, 513, 1600, 8192, 32768):
                    env = dict(c_env(form, 32, 8, batch, 16, sms=sms), nkv=nkv, max_nkv=nkv)
                    got = fb.planned(form, batch, nkv, fb.CAPACITY, sms, page=16, kv_heads=8)
                    self.assertEqual(sorted(got), sorted(v["planned"]), v["name"])
                    for name, decl in v["planned"].items():
                        xs, ctype = got[name]
                        self.assertEqual(xs, self.generate(decl, env, batch), "%s %s b%d nkv %d" % (v["name"], name, batch, nkv))
                        self.assertEqual(ctype, decl.get("type", "i32"), name)

    def test_split_by_hand(self):
        # 1600 rows: 4 chunks of 512; batch 2, capacity 2048: 8 items.
        p = fb.planned("split", 2, 1600, 2048, 132)
        self.assertEqual(p["o_indptr"][0], [0, 4, 8])
        self.assertEqual(p["request_indices"][0], [0, 0, 0, 0, 1, 1, 1, 1])
        self.assertEqual(p["kv_tile_indices"][0], [0, 1, 2, 3, 0, 1, 2, 3])
        self.assertEqual(p["block_valid_mask"], ([1] * 8, "bool"))
        q = fb.planned("split", 2, 600, 2048, 132)
        self.assertEqual(q["block_valid_mask"][0], [1, 1, 1, 1, 0, 0, 0, 0])
        self.assertEqual(q["kv_tile_indices"][0], [0, 1, 0, 1, 0, 0, 0, 0])
        self.assertEqual(q["kv_chunk_size"][0], [512])


    def test_planner_by_hand(self):
        # FlashInfer's planner on 132 SMs (max grid 1056, 8 KV heads: 132
        # items): batch 1 gets 128-row chunks up to 132 x 128 rows, batch 16
        # eight chunks a sequence; at least 128 rows a chunk.
        for batch, nkv, page, want in ((1, 2048, 16, 128), (1, 8192, 16, 128), (1, 32768, 16, 256),
                                       (16, 2048, 16, 256), (16, 8192, 16, 1024), (16, 32768, 16, 4096),
                                       (1, 2048, 64, 128), (1, 32768, 64, 256), (16, 32768, 64, 4096), (1, 1, 16, 128)):
            self.assertEqual(fb.planner_chunk(batch, nkv, page, 8, 132), want, (batch, nkv, page))
        p = fb.planned("planned", 2, 600, 32768, 132, page=16, kv_heads=8)
        self.assertEqual(p["kv_chunk_size"][0], [128])
        self.assertEqual(p["o_indptr"][0], [0, 5, 10])
        self.assertEqual(len(p["request_indices"][0]), 132)
        self.assertEqual(p["block_valid_mask"][0], [1] * 10 + [0] * 122)
        self.assertEqual(fb.geometry("planned", 32, 8, 128, 16, 32768, 132)[0][0], (132, 8, 1))
        # An H100 PCIe's 114 SMs: 912 blocks, 114 items; batch 16 at 32768
        # rows gets cdiv(2048 pages, 7) = 293 pages a chunk.
        self.assertEqual(fb.geometry("planned", 32, 8, 128, 16, 32768, 114)[0][0], (114, 8, 1))
        self.assertEqual(fb.planner_chunk(16, 32768, 16, 8, 114), 293 * 16)


class TestPages(unittest.TestCase):
    def test_table(self):
        indptr, indices, last, n = fb.page_table(3, 1000, 16, random.Random(2))
        self.assertEqual(n, 3 * 63)
        self.assertEqual(indptr, [0, 63, 126, 189])
        self.assertEqual(sorted(indices), list(range(n)))
        self.assertNotEqual(indices, list(range(n)))  # shuffled
        self.assertEqual(last, [1000 - 62 * 16] * 3)
        _, _, last, _ = fb.page_table(1, 1024, 64, random.Random(0))
        self.assertEqual(last, [64])  # a full last page, never 0

    def test_kernel_addressing_reads_the_logical_rows(self):
        # paged_kv_t's address of (sequence b, row r, KV head h, element
        # d) from the struct's fields, against the element the script's
        # C-contiguous pool holds there: every logical row of every
        # sequence is found, in both orders.
        kvh, hd, batch, nkv = 2, 128, 2, 37
        for layout in fb.LAYOUTS:
            for page in (4, 16):
                indptr, indices, last, n = fb.page_table(batch, nkv, page, random.Random(page))
                shape = fb.pool_shape(layout, n, page, kvh, hd)
                cs = c_strides(shape)
                addr = {k: 0 for k in list(BUFFERS) + ["planned:request_indices", "planned:kv_tile_indices",
                                                       "planned:kv_chunk_size"]}
                kv = fb.build_params("single", layout, 4, kvh, hd, batch, 64, page, addr, 132).paged_kv
                self.assertEqual(kv.page_size.d_, page)
                for b in range(batch):
                    for r in range(nkv):
                        pg = indices[indptr[b] + fb.fast_mod_div_quotient(r, *fb.fast_mod_div(page))]
                        for h in range(kvh):
                            for d in (0, hd - 1):
                                got = pg * kv.stride_page + (r % page) * kv.stride_n + h * kv.stride_h + d
                                idx = (pg, r % page, h, d) if layout == "nhd" else (pg, h, r % page, d)
                                self.assertEqual(got, sum(i * s for i, s in zip(idx, cs)))
                self.assertEqual(indptr[-1] * page - (page - last[0]) * batch, batch * nkv)


class TestGeometry(unittest.TestCase):
    def test_by_hand(self):
        # Group 4: vec 8, bdx 16, bdy 4, bdz 2; group 8: bdz 1; 128
        # threads and 9216 B of shared memory either way (h100-check.log:
        # "1024 B static + 9216 B dynamic"); the merge 16 x 8, 8704 B.
        g = fb.geometry("single", 32, 8, 128, 16, 32768, 132)
        self.assertEqual(g, [((16, 8, 1), (16, 4, 2), 9216)])
        g = fb.geometry("split", 64, 8, 128, 1, 32768, 132)
        self.assertEqual(g, [((64, 8, 1), (16, 8, 1), 9216), ((132, 1, 1), (16, 8, 1), 8704)])
        # batch 16 x 32 heads = 512 rows over 132 SMs: 4 blocks an SM;
        # x 64 heads: 8; batch 16 x 64 on 78 SMs would want 14: capped at 12.
        self.assertEqual(fb.geometry("split", 32, 8, 128, 16, 32768, 132)[1][0], (528, 1, 1))
        self.assertEqual(fb.geometry("split", 64, 8, 128, 16, 32768, 132)[1][0], (1056, 1, 1))
        self.assertEqual(fb.geometry("split", 64, 8, 128, 16, 32768, 78)[1][0], (78 * 12, 1, 1))
        self.assertEqual(fb.geometry("split", 32, 8, 128, 16, 32768, 132)[0][0], (16 * 64, 8, 1))

    def test_against_the_spec(self):
        for form, layout, v in variants():
            for heads, kv_heads in ((32, 8), (64, 8)):
                for batch in (1, 16):
                    for sms in (78, 132):
                        env = dict(c_env(form, heads, kv_heads, batch, 16), sms=sms)
                        want = []
                        for l in v["launches"]:
                            # Each launch's grid reads its own declared
                            # blocks_per_sm, as ktune plans it (1 where none).
                            env["blocks_per_sm"] = l.get("blocks_per_sm", 1)
                            grid = [c_eval(x, env) for x in l["grid"]]
                            block = [c_eval(x, env) for x in l["block"]]
                            want.append((tuple(grid + [1] * (3 - len(grid))), tuple(block + [1] * (3 - len(block))),
                                         c_eval(l["shared"], env)))
                        self.assertEqual(fb.geometry(form, heads, kv_heads, 128, batch, fb.CAPACITY, sms), want,
                                         "%s %d/%d b%d" % (v["name"], heads, kv_heads, batch))


    def test_declared_blocks_per_sm(self):
        # The spec's launches declare the occupancies the bench sizes its
        # grids with: the merge kernel's BLOCKS_PER_SM wherever it runs,
        # the decode kernel's DECODE_BLOCKS_PER_SM where the planned form
        # pads to it (8 * sms); nothing else declares one.
        declared = 0
        for form, layout, v in variants():
            for i, l in enumerate(v["launches"]):
                merge = "MergeStates" in l["entry"]
                if merge:
                    want = fb.BLOCKS_PER_SM
                elif form == "planned":
                    want = fb.DECODE_BLOCKS_PER_SM
                else:
                    want = None
                self.assertEqual(l.get("blocks_per_sm"), want, "%s launches[%d]" % (v["name"], i))
                declared += want is not None
        self.assertEqual(declared, 6)


class TestEntries(unittest.TestCase):
    def template_ints(self, text, env):
        """The unsigned template arguments of a spec entry, its {EXPR}
        placeholders evaluated."""
        text = re.sub(r"\{([^{}]*)\}", lambda m: str(c_eval(m.group(1), env)), text)
        return [int(x) for x in re.findall(r"\b(\d+)u\b", text)]

    def test_names_are_the_ones_check_printed(self):
        with open(CHECK_LOG, encoding="utf-8") as f:
            log = f.read()
        for g in (4, 8):
            self.assertIn("(" + fb.decode_name(128, g) + ")", log)
        self.assertIn("(" + fb.merge_name(128) + ")", log)
        self.assertNotEqual(fb.decode_name(128, 4), fb.decode_name(128, 8))

    def test_template_arguments_follow_the_spec(self):
        for form, layout, v in variants():
            for heads in (32, 64):
                env = c_env(form, heads, 8, 1, 16)
                names = [fb.decode_name(128, heads // 8), fb.merge_name(128)]
                for l, name in zip(v["launches"], names):
                    want = self.template_ints(l["entry"], env)
                    got = [int(x) for x in re.findall(r"Lj(\d+)E", name)]
                    self.assertEqual(got, want, l["entry"])

    def test_entries_in(self):
        img = b"\0.text." + fb.merge_name(128).encode() + b"\0junk" + fb.decode_name(128, 4).encode() + b"\0"
        self.assertEqual(fb.entries_in(img, [fb.decode_name(128, 4), fb.decode_name(128, 8), fb.merge_name(128)]),
                         [fb.decode_name(128, 4), fb.merge_name(128)])


class FakeTorch:
    """Enough of torch.cuda for event_times: a clock that calls and
    flushes advance, events that read it, a log of the order."""

    def __init__(self, call_ms, flush_ms):
        self.now, self.log, self.call_ms, self.flush_ms = 0.0, [], call_ms, flush_ms
        fake = self

        class Event:
            def __init__(self, enable_timing):
                assert enable_timing
                self.t = None

            def record(self):
                self.t = fake.now
                fake.log.append("rec")

            def elapsed_time(self, other):
                return other.t - self.t

        class Cuda:
            @staticmethod
            def synchronize():
                fake.log.append("sync")

        Cuda.Event = Event
        self.cuda = Cuda

    def call(self):
        self.now += self.call_ms
        self.log.append("call")

    def zero_(self):
        self.now += self.flush_ms
        self.log.append("zero")


class TestTiming(unittest.TestCase):
    def test_cold_flushes_outside_the_events(self):
        t = FakeTorch(0.02, 0.03)
        times = fb.event_times(t, t.call, t)
        # The estimate includes the flush: 0.05 ms a call, so 500 warm-up
        # and 2000 measured calls, each measured one the call alone.
        self.assertEqual(len(times), 2000)
        self.assertTrue(all(abs(x - 0.02) < 1e-9 for x in times))
        self.assertEqual(t.log[:4], ["sync", "call", "sync", "rec"])
        self.assertEqual(t.log[4:14], ["zero", "call"] * 5)
        self.assertEqual(t.log.count("call"), 1 + 5 + 500 + 2000)
        self.assertEqual(t.log.count("zero"), 5 + 500 + 2000)
        tail = t.log[-(4 * 2000 + 1):]
        self.assertEqual(tail[:4], ["zero", "rec", "call", "rec"])
        self.assertEqual(tail[-1], "sync")

    def test_hot_never_flushes(self):
        t = FakeTorch(0.02, 0.03)
        times = fb.event_times(t, t.call, None)
        self.assertEqual(len(times), 5000)
        self.assertNotIn("zero", t.log)

    def test_counts(self):
        self.assertEqual(fb.iteration_counts(0.05), (500, 2000))
        self.assertEqual(fb.iteration_counts(0.3), (83, 333))
        self.assertEqual(fb.iteration_counts(250.0), (1, 1))

    def test_flush_bytes(self):
        mib = 1 << 20
        self.assertEqual(fb.flush_bytes(50 * mib), 100 * mib)  # H100
        self.assertEqual(fb.flush_bytes(60 * mib), 120 * mib)  # H200
        self.assertEqual(fb.flush_bytes(50 * mib + 300000), 100 * mib)

    def test_median(self):
        self.assertEqual(fb.median([3.0, 1.0, 2.0]), 2.0)
        self.assertEqual(fb.median([4.0, 1.0, 2.0, 3.0]), 2.5)
        with self.assertRaises(ValueError):
            fb.median([])


if __name__ == "__main__":
    unittest.main()
