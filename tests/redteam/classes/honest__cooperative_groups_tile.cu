// region: smooth_kernel
// expect: accept
// A shared-memory window synchronised with cooperative groups: `this_thread_block()` and
// `block.sync()` in place of `__syncthreads()`, halo loads by the first kRadius threads.
#include <cooperative_groups.h>

__global__ void smooth_kernel(const float* in, const float* weights, float* out, int n)
{
    namespace cg = cooperative_groups;
    __shared__ float window[kBlockSize + 2 * kRadius];
    cg::thread_block block = cg::this_thread_block();
    const int t = static_cast<int>(block.thread_rank());
    const int first = blockIdx.x * kBlockSize;
    const int i = first + t;
    window[t + kRadius] = in[min(i, n - 1)];
    if (t < kRadius) {
        window[t] = in[max(first - kRadius + t, 0)];
        window[t + kBlockSize + kRadius] = in[min(first + kBlockSize + t, n - 1)];
    }
    block.sync();
    if (i >= n) {
        return;
    }
    float acc = 0.0f;
    for (int k = -kRadius; k <= kRadius; ++k) {
        acc += weights[k + kRadius] * window[t + kRadius + k];
    }
    out[i] = acc;
}
