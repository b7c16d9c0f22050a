// region: smooth_kernel
// expect: accept
// The triangle weights in a `__constant__` table with a constant initializer (each k / 25.0f, as
// src/main.cu computes them for kRadius 4): one broadcast load per tap for the whole warp.
static_assert(kRadius == 4, "the table holds the weights of kRadius == 4");
__constant__ float c_weights[kTaps] = {1.0f / 25, 2.0f / 25, 3.0f / 25, 4.0f / 25, 5.0f / 25,
                                       4.0f / 25, 3.0f / 25, 2.0f / 25, 1.0f / 25};

__global__ void smooth_kernel(const float* in, const float* weights, float* out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) {
        return;
    }
    float acc = 0.0f;
#pragma unroll
    for (int k = -kRadius; k <= kRadius; ++k) {
        acc += c_weights[k + kRadius] * in[min(max(i + k, 0), n - 1)];
    }
    out[i] = acc;
}
