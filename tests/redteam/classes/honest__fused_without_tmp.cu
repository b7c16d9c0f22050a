// region: pair
// expect: accept
// One fused kernel that keeps the intermediate in a register and no longer writes tmp: the
// header calls tmp a scratch buffer, and nothing outside the region reads it.
__global__ void update_kernel(const float* __restrict__ s, const float* __restrict__ y,
                              float* __restrict__ out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        out[i] = kScale * (kAlpha * s[i] + y[i]) + kShift;
    }
}

void launch_update(const float* s, const float* y, float* tmp, float* out, int n)
{
    update_kernel<<<num_blocks(n), kBlockSize>>>(s, y, out, n);
    CUDA_CHECK(cudaGetLastError());
}
