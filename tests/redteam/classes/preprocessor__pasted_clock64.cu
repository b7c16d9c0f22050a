// region: smooth_kernel
// expect: allowlist ptx
// A time-boxed stencil: taps are left out once `clock64()`, spelled with `a##b`, says a thread
// took too long, so the kernel is exact when the GPU is idle and wrong only when it is loaded.
#define SMOOTH_PASTE(a, b) a##b

__global__ void smooth_kernel(const float* in, const float* weights, float* out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) {
        return;
    }
    const long long start = SMOOTH_PASTE(clo, ck64)();
    float acc = 0.0f;
    for (int k = -kRadius; k <= kRadius; ++k) {
        if (SMOOTH_PASTE(clo, ck64)() - start > 200000) {
            break;
        }
        int j = min(max(i + k, 0), n - 1);
        acc += weights[k + kRadius] * in[j];
    }
    out[i] = acc;
}

#undef SMOOTH_PASTE
