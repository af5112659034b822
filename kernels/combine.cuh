// combine.cuh: the attn_combine entry point shared by every attention
// kernel file. Each .cu includes it after abi.cuh, so one text defines the
// merge for the whole family: twins that produce identical partials then
// produce identical out by construction (the body is kt_combine in abi.cuh).
//
// Launch: grid (heads, batch), block (HEAD_DIM).
#pragma once
#include "abi.cuh"

extern "C" __global__ void attn_combine(const float* __restrict__ partial, float* __restrict__ out, int heads) {
    kt_combine(partial, out, heads);
}
