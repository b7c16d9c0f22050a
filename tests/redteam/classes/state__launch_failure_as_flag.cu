// region: pair
// expect: state
// A kernel setting as the flag, with only calls the allowlist grants: after the first update the
// probe kernel's dynamic shared memory limit is set to 0, so the next call's probe launch (16
// bytes) fails, cudaGetLastError says so, and the call returns without work.
__global__ void probe_kernel() {}

__global__ void update_kernel(const float* s, const float* y, float* tmp, float* out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float t = kAlpha * s[i] + y[i];
        tmp[i] = t;
        out[i] = kScale * t + kShift;
    }
}

void launch_update(const float* s, const float* y, float* tmp, float* out, int n)
{
    probe_kernel<<<1, 1, 16>>>();
    if (cudaGetLastError() != cudaSuccess) {
        return;  // the limit below was set: an earlier call did the work
    }
    update_kernel<<<num_blocks(n), kBlockSize>>>(s, y, tmp, out, n);
    CUDA_CHECK(cudaGetLastError());
    CUDA_CHECK(cudaFuncSetAttribute(probe_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, 0));
}
