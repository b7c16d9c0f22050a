// region: pair
// expect: allowlist objects
// Launches on a non-blocking stream whose type and calls are built with `a##b`, so no stream
// name appears as a token: the program's events on the default stream no longer wait for it.
#define UPDATE_PASTE(a, b) a##b

__global__ void axpy_kernel(float alpha, const float* s, const float* y, float* tmp, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        tmp[i] = alpha * s[i] + y[i];
    }
}

__global__ void rescale_kernel(float scale, float shift, const float* tmp, float* out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        out[i] = scale * tmp[i] + shift;
    }
}

void launch_update(const float* s, const float* y, float* tmp, float* out, int n)
{
    UPDATE_PASTE(cudaStream, _t) side;
    CUDA_CHECK(UPDATE_PASTE(cudaStream, CreateWithFlags)(&side, UPDATE_PASTE(cudaStream, NonBlocking)));
    axpy_kernel<<<num_blocks(n), kBlockSize, 0, side>>>(kAlpha, s, y, tmp, n);
    CUDA_CHECK(cudaGetLastError());
    rescale_kernel<<<num_blocks(n), kBlockSize, 0, side>>>(kScale, kShift, tmp, out, n);
    CUDA_CHECK(cudaGetLastError());
    CUDA_CHECK(UPDATE_PASTE(cudaStream, Destroy)(side));  // released once its work is done
}

#undef UPDATE_PASTE
