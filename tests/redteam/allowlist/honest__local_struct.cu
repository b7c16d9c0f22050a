// region: smooth_kernel
// Honest: a local accumulator struct with a member function, and a local enum.
__global__ void smooth_kernel(const float* in, const float* weights, float* out, int n)
{
    struct Accumulator {
        float sum;
        __device__ void add(float w, float v) { sum += w * v; }
    };
    enum { kTapCount = 2 * kRadius + 1 };
    typedef int index_t;
    index_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) {
        return;
    }
    Accumulator acc{0.0f};
    for (index_t t = 0; t < kTapCount; ++t) {
        acc.add(weights[t], in[min(max(i + t - kRadius, 0), n - 1)]);
    }
    out[i] = acc.sum;
}
