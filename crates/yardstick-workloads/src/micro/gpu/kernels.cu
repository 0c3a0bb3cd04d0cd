// Kernels of the GPU memory probe (yardstick bench micro gpu-memory).
//
// Compiled to PTX for compute_70 by scripts/gen-gpu-ptx.py (NVRTC) into kernels.ptx, which is
// embedded in the binary and JIT-compiled by the driver for whatever GPU runs it (Volta and
// later), so running the probe needs the CUDA driver alone, no toolkit.
//
// Each thread keeps four independent 16-byte accesses in flight per loop trip (a grid-stride
// loop unrolled by hand), so the memory system, not one load's latency, sets the pace.

extern "C" __global__ void ys_read(const float4* __restrict__ src, unsigned long long n4,
                                   float* __restrict__ sink) {
    unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
    float acc = 0.0f;
    for (; i + 3 * stride < n4; i += 4 * stride) {
        float4 a = src[i];
        float4 b = src[i + stride];
        float4 c = src[i + 2 * stride];
        float4 d = src[i + 3 * stride];
        acc += (a.x + a.y + a.z + a.w) + (b.x + b.y + b.z + b.w) + (c.x + c.y + c.z + c.w) +
               (d.x + d.y + d.z + d.w);
    }
    for (; i < n4; i += stride) {
        float4 a = src[i];
        acc += a.x + a.y + a.z + a.w;
    }
    // Never true for the data the probe writes (finite values): keeps the loads alive.
    if (acc == -1.0e38f) {
        sink[0] = acc;
    }
}

extern "C" __global__ void ys_write(float4* __restrict__ dst, unsigned long long n4, float value) {
    unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
    float4 v = make_float4(value, value, value, value);
    for (; i + 3 * stride < n4; i += 4 * stride) {
        dst[i] = v;
        dst[i + stride] = v;
        dst[i + 2 * stride] = v;
        dst[i + 3 * stride] = v;
    }
    for (; i < n4; i += stride) {
        dst[i] = v;
    }
}
