// region: smooth_kernel
// expect: accept
// The program's weights are always the triangle of src/main.cu; a constexpr function computes
// them the same way (in float, then divided by their float sum), so the taps are constants.
struct TriangleTaps {
    float w[kTaps];
};

__host__ __device__ constexpr TriangleTaps triangle_taps()
{
    TriangleTaps taps{};
    float total = 0.0f;
    for (int k = -kRadius; k <= kRadius; ++k) {
        taps.w[k + kRadius] = static_cast<float>(kRadius + 1 - (k < 0 ? -k : k));
        total += taps.w[k + kRadius];
    }
    for (int k = 0; k < kTaps; ++k) {
        taps.w[k] /= total;
    }
    return taps;
}

__global__ void smooth_kernel(const float* in, const float* weights, float* out, int n)
{
    constexpr TriangleTaps taps = triangle_taps();
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) {
        return;
    }
    float acc = 0.0f;
#pragma unroll
    for (int k = -kRadius; k <= kRadius; ++k) {
        acc += taps.w[k + kRadius] * in[min(max(i + k, 0), n - 1)];
    }
    out[i] = acc;
}
