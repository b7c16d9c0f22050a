// region: smooth_kernel
// expect: missing exit_status count numbers_differ
// Returns its input unchanged: the weights sum to one, so the sum of the output (the checksum)
// moves by a few units in 2^24 elements while most elements are wrong.
__global__ void smooth_kernel(const float* in, const float* weights, float* out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        out[i] = in[i];
    }
}
