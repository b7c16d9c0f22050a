// region: smooth_kernel
// Honest: the clamp offsets come from a __device__ constexpr table built by a constexpr function.
struct Offsets {
    int at[2 * kRadius + 1];
};

__host__ __device__ constexpr Offsets make_offsets()
{
    Offsets table{};
    for (int k = 0; k < 2 * kRadius + 1; ++k) {
        table.at[k] = k - kRadius;
    }
    return table;
}

__device__ constexpr Offsets kOffsets = make_offsets();
static constexpr int kFirst = -kRadius, kLast = kRadius;

__global__ void smooth_kernel(const float* in, const float* weights, float* out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) {
        return;
    }
    float acc = 0.0f;
#pragma unroll
    for (int k = 0; k <= kLast - kFirst; ++k) {
        int j = min(max(i + kOffsets.at[k], 0), n - 1);
        acc += weights[k] * in[j];
    }
    out[i] = acc;
}
