// timing.h: kfront's two timings of one partial+combine pair, the same
// two probes ktune reports for a point.
//   cold:  L2 flushed before every sample by READING 2 x L2 of a buffer
//          (ktune's cold probe: a memset flush leaves L2 full of dirty
//          lines whose write-back then runs inside the timed kernels, up to
//          7 us at batch 1, nkv 32768), the pair bracketed by events; the
//          flush kernel is enqueued first and runs for tens of
//          microseconds, so the host has queued the pair before the GPU
//          reaches it and no launch latency leaks into the sample. Median
//          of 30; also the partial's share (start to the event between the
//          two launches, timed separately because that event itself costs
//          the pair time).
//   graph: GRAPH_PAIRS pairs captured in one CUDA graph and replayed over
//          warm caches (ktune's graph probe): time per pair, median of 10
//          replays. It shows what a decode step that launches through a
//          graph pays: no launch gaps, and whatever L2 keeps between pairs.
// Included by kfront.cu only: it relies on its includes, CK and the
// launch helpers.
#pragma once

static const int GRAPH_PAIRS = 20;

struct Timing {
    double cold = 0, split = 0, part = 0, graph = 0;  // split: cold with an event between the launches
};

static double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

static void readFlush(const Util& U, CUdeviceptr flush, size_t flushBytes, CUdeviceptr sink, CUstream st) {
    unsigned long long n = flushBytes / 16;
    void* a[] = {&flush, &n, &sink};
    CK(cuLaunchKernel(U.readFlush, 132 * 16, 1, 1, 512, 1, 1, 0, st, a, nullptr));
}

static Timing runTime(const Module& m, const Config& c, Problem& P, const std::vector<int>& lens, CUdeviceptr flush,
                      size_t flushBytes, const Util& U, CUdeviceptr sink, CUstream gs) {
    std::vector<int> pos(P.batch);
    for (int b = 0; b < P.batch; b++) pos[b] = lens[b] - 1;
    CK(cuMemcpyHtoD(P.pos, pos.data(), P.batch * 4));
    CUevent e0, e1, e2;
    CK(cuEventCreate(&e0, 0));
    CK(cuEventCreate(&e1, 0));
    CK(cuEventCreate(&e2, 0));
    for (int i = 0; i < 3; i++) launchPair(m, c, P, P.k, P.v, P.cap, 0);
    CK(cuCtxSynchronize());
    std::vector<double> tt, tp;
    for (int s = 0; s < 30; s++) {
        readFlush(U, flush, flushBytes, sink, 0);
        CK(cuEventRecord(e0, 0));
        launchPartial(m, c, P, P.k, P.v, P.cap, 0);
        CK(cuEventRecord(e1, 0));
        launchCombine(m, c, P, 0);
        CK(cuEventRecord(e2, 0));
        CK(cuEventSynchronize(e2));
        float a01, a02;
        CK(cuEventElapsedTime(&a01, e0, e1));
        CK(cuEventElapsedTime(&a02, e0, e2));
        tp.push_back(a01 * 1e3);
        tt.push_back(a02 * 1e3);
    }
    // The pair alone, no event between the launches: what ktune's cold
    // probe times (the middle event above costs the pair some time).
    std::vector<double> tc;
    for (int s = 0; s < 30; s++) {
        readFlush(U, flush, flushBytes, sink, 0);
        CK(cuEventRecord(e0, 0));
        launchPair(m, c, P, P.k, P.v, P.cap, 0);
        CK(cuEventRecord(e2, 0));
        CK(cuEventSynchronize(e2));
        float ms;
        CK(cuEventElapsedTime(&ms, e0, e2));
        tc.push_back(ms * 1e3);
    }
    Timing t;
    t.cold = median(tc);
    t.split = median(tt);
    t.part = median(tp);

    // Graph probe: capture GRAPH_PAIRS pairs on a non-default stream.
    CUgraph graph;
    CUgraphExec exec;
    CK(cuStreamBeginCapture(gs, CU_STREAM_CAPTURE_MODE_RELAXED));
    for (int i = 0; i < GRAPH_PAIRS; i++) launchPair(m, c, P, P.k, P.v, P.cap, gs);
    CK(cuStreamEndCapture(gs, &graph));
    CK(cuGraphInstantiateWithFlags(&exec, graph, 0));
    CK(cuGraphLaunch(exec, gs));  // warm-up replay
    CK(cuStreamSynchronize(gs));
    std::vector<double> tg;
    for (int s = 0; s < 10; s++) {
        CK(cuEventRecord(e0, gs));
        CK(cuGraphLaunch(exec, gs));
        CK(cuEventRecord(e2, gs));
        CK(cuEventSynchronize(e2));
        float ms;
        CK(cuEventElapsedTime(&ms, e0, e2));
        tg.push_back(ms * 1e3 / GRAPH_PAIRS);
    }
    t.graph = median(tg);
    CK(cuGraphExecDestroy(exec));
    CK(cuGraphDestroy(graph));
    cuEventDestroy(e0);
    cuEventDestroy(e1);
    cuEventDestroy(e2);
    return t;
}
