// argcheck.cu: an engine-style kernel of four parameters (a pointer in,
// a pointer out, an int, a float), for the parameter check: a spec whose
// launch declares three, or declares the int as an i64, must be refused
// by ktune check without a GPU, at the launch's line, naming the first
// parameter that differs. The body only touches its parameters.
extern "C" __global__ void step(const float* q, float* out, int heads, float scale) {
    if (threadIdx.x < heads) out[threadIdx.x] = q[threadIdx.x] * scale;
}
