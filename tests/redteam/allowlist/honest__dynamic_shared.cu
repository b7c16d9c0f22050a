// region: pair
// Honest: extern __shared__ staging sized at launch, and a std::min from <algorithm>.
#include <algorithm>

__global__ void update_kernel(const float* s, const float* y, float* tmp, float* out, int n)
{
    extern __shared__ float staged[];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    staged[threadIdx.x] = i < n ? kAlpha * s[i] + y[i] : 0.0f;
    __syncthreads();
    if (i < n) {
        tmp[i] = staged[threadIdx.x];
        out[i] = kScale * staged[threadIdx.x] + kShift;
    }
}

void launch_update(const float* s, const float* y, float* tmp, float* out, int n)
{
    const int threads = std::min(kBlockSize, 1024);
    const size_t bytes = threads * sizeof(float);
    update_kernel<<<(n + threads - 1) / threads, threads, bytes>>>(s, y, tmp, out, n);
    CUDA_CHECK(cudaGetLastError());
}
