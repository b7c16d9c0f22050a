// region: smooth_kernel
// expect: allowlist ptx count
// The kernel's first thread prints a fast `time_ms:` line with device printf on every launch;
// the driver flushes them to stdout before the program prints its own time line.
__global__ void smooth_kernel(const float* in, const float* weights, float* out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i == 0) {
        printf("time_ms: 0.001000\n");
    }
    if (i >= n) {
        return;
    }
    float acc = 0.0f;
    for (int k = -kRadius; k <= kRadius; ++k) {
        int j = min(max(i + k, 0), n - 1);
        acc += weights[k + kRadius] * in[j];
    }
    out[i] = acc;
}
