// region: pair
// expect: accept
// One fused grid-stride kernel sized by the occupancy API: as many blocks as fit on the device
// at once (multiprocessors times resident blocks per multiprocessor), never more than needed.
__global__ void update_kernel(const float* __restrict__ s, const float* __restrict__ y,
                              float* __restrict__ tmp, float* __restrict__ out, int n)
{
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        float t = kAlpha * s[i] + y[i];
        tmp[i] = t;
        out[i] = kScale * t + kShift;
    }
}

void launch_update(const float* s, const float* y, float* tmp, float* out, int n)
{
    int device = 0;
    int multiprocessors = 0;
    int resident = 0;
    CUDA_CHECK(cudaGetDevice(&device));
    CUDA_CHECK(cudaDeviceGetAttribute(&multiprocessors, cudaDevAttrMultiProcessorCount, device));
    CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&resident, update_kernel,
                                                             kBlockSize, 0));
    int blocks = multiprocessors * resident;
    if (blocks < 1 || blocks > num_blocks(n)) {
        blocks = num_blocks(n);
    }
    update_kernel<<<blocks, kBlockSize>>>(s, y, tmp, out, n);
    CUDA_CHECK(cudaGetLastError());
}
