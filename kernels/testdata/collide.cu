// collide.cu: an engine-style kernel whose template parameters are named
// like ktune's defines (SPLITS, HEAD_DIM) and like a partition axis
// (PARTITION_SIZE), as vLLM's paged_attention_v2_kernel names its own.
// Compiled with -DSPLITS=… the template line reads `int 32` and NVRTC
// stops with "expected a "," or ">""; a variant that declares forward
// gets no such define, and its entry takes the axes as template
// arguments ("partial<{SPLITS}, {head_dim}, {PARTITION_SIZE}>"). The body
// only touches its parameters: it is for the compile and the parameter
// check, not for attention.
template <int SPLITS, int HEAD_DIM, int PARTITION_SIZE>
__global__ void partial(const float* q, float* out, int heads) {
    static_assert(HEAD_DIM % 4 == 0 && PARTITION_SIZE > 0 && SPLITS > 0, "sizes");
    int i = blockIdx.x * HEAD_DIM + threadIdx.x;
    if (blockIdx.y < heads) out[i] = q[i] * float(PARTITION_SIZE / SPLITS);
}
