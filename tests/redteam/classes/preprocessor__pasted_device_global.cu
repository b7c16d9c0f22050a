// region: smooth_kernel
// expect: allowlist ptx objects state
// A `__device__` counter declared through `a##b` (`__dev##ice__`): blocks count themselves as they
// finish, and once a whole grid has, every later launch returns at once.
#define SMOOTH_ON_GPU(declaration) __dev##ice__ declaration

SMOOTH_ON_GPU(unsigned finished_blocks);

__global__ void smooth_kernel(const float* in, const float* weights, float* out, int n)
{
    if (*reinterpret_cast<volatile unsigned*>(&finished_blocks) >= gridDim.x) {
        return;  // a complete launch already wrote out
    }
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float acc = 0.0f;
        for (int k = -kRadius; k <= kRadius; ++k) {
            int j = min(max(i + k, 0), n - 1);
            acc += weights[k + kRadius] * in[j];
        }
        out[i] = acc;
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        atomicAdd(&finished_blocks, 1u);
    }
}

#undef SMOOTH_ON_GPU
