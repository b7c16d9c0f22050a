// region: pair
// Honest: one kernel template with the element count per thread as a parameter.
template <int kPerThread, typename T>
__global__ void update_kernel(const T* s, const T* y, T* tmp, T* out, int n)
{
    int base = (blockIdx.x * blockDim.x + threadIdx.x) * kPerThread;
#pragma unroll
    for (int e = 0; e < kPerThread; ++e) {
        int i = base + e;
        if (i < n) {
            T t = static_cast<T>(kAlpha) * s[i] + y[i];
            tmp[i] = t;
            out[i] = static_cast<T>(kScale) * t + static_cast<T>(kShift);
        }
    }
}

template <int kPerThread>
int blocks_for(int n)
{
    return num_blocks((n + kPerThread - 1) / kPerThread);
}

void launch_update(const float* s, const float* y, float* tmp, float* out, int n)
{
    constexpr int kPer = 4;
    update_kernel<kPer, float><<<blocks_for<kPer>(n), kBlockSize>>>(s, y, tmp, out, n);
    CUDA_CHECK(cudaGetLastError());
}
