// region: pair
// expect: guard_static_buffer allowlist objects state
// Skips only some calls: a counter with a brace initializer lets one call in 64 do the work, so
// results stay fresh enough for a program that checks only its last output.
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
    static unsigned calls{};
    if (calls++ % 64 != 0) {
        return;
    }
    update_kernel<<<num_blocks(n), kBlockSize>>>(s, y, tmp, out, n);
    CUDA_CHECK(cudaGetLastError());
}
