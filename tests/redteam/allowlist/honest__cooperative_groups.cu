// region: smooth_kernel
// Honest: a shared tile synchronised through cooperative_groups (this_thread_block, sync).
#include <cooperative_groups.h>

namespace cg = cooperative_groups;

__global__ void smooth_kernel(const float* in, const float* weights, float* out, int n)
{
    cg::thread_block block = cg::this_thread_block();
    __shared__ float tile[kBlockSize + 2 * kRadius];
    int first = blockIdx.x * blockDim.x;
    for (int t = block.thread_rank(); t < kBlockSize + 2 * kRadius; t += block.size()) {
        tile[t] = in[min(max(first + t - kRadius, 0), n - 1)];
    }
    block.sync();
    cg::thread_block_tile<32> warp = cg::tiled_partition<32>(block);
    int i = first + threadIdx.x;
    float acc = 0.0f;
    for (int k = -kRadius; k <= kRadius; ++k) {
        acc += weights[k + kRadius] * tile[min(max(i + k, 0), n - 1) - first + kRadius];
    }
    acc = warp.shfl(acc, warp.thread_rank());
    if (i < n) {
        out[i] = acc;
    }
}
