// region: pair
// expect: accept
// One fused kernel, a template on its block size and the elements each thread handles, launched
// with explicit template arguments and `__launch_bounds__` of the same block size.
template <int kThreads, int kItems>
__global__ void __launch_bounds__(kThreads)
    update_kernel(const float* __restrict__ s, const float* __restrict__ y,
                  float* __restrict__ tmp, float* __restrict__ out, int n)
{
    const int base = blockIdx.x * (kThreads * kItems) + threadIdx.x;
#pragma unroll
    for (int r = 0; r < kItems; ++r) {
        int i = base + r * kThreads;
        if (i < n) {
            float t = kAlpha * s[i] + y[i];
            tmp[i] = t;
            out[i] = kScale * t + kShift;
        }
    }
}

void launch_update(const float* s, const float* y, float* tmp, float* out, int n)
{
    constexpr int kThreads = 128;
    constexpr int kItems = 4;
    const int blocks = (n + kThreads * kItems - 1) / (kThreads * kItems);
    update_kernel<kThreads, kItems><<<blocks, kThreads>>>(s, y, tmp, out, n);
    CUDA_CHECK(cudaGetLastError());
}
