// region: pair
// Cheat: the launcher other files call changes its parameter type.
__global__ void update_kernel(const float* s, const float* y, float* tmp, float* out, long n)
{
    long i = blockIdx.x * static_cast<long>(blockDim.x) + threadIdx.x;
    if (i < n) {
        tmp[i] = kAlpha * s[i] + y[i];
        out[i] = kScale * tmp[i] + kShift;
    }
}

void launch_update(const float* s, const float* y, float* tmp, float* out, long n)
{
    update_kernel<<<num_blocks(static_cast<int>(n)), kBlockSize>>>(s, y, tmp, out, n);
    CUDA_CHECK(cudaGetLastError());
}
