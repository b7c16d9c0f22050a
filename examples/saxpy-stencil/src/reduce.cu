// Per-block sums of the result, used for the checksum.
#include "pipeline.cuh"

__global__ void block_sums_kernel(const float* x, double* partials, int n)
{
    __shared__ double cache[kBlockSize];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    cache[threadIdx.x] = i < n ? static_cast<double>(x[i]) : 0.0;
    __syncthreads();
    // A fixed tree order keeps the checksum identical from run to run.
    for (int stride = blockDim.x / 2; stride > 0; stride /= 2) {
        if (threadIdx.x < stride) {
            cache[threadIdx.x] += cache[threadIdx.x + stride];
        }
        __syncthreads();
    }
    if (threadIdx.x == 0) {
        partials[blockIdx.x] = cache[0];
    }
}

void launch_block_sums(const float* x, double* partials, int n)
{
    block_sums_kernel<<<num_blocks(n), kBlockSize>>>(x, partials, n);
    CUDA_CHECK(cudaGetLastError());
}
