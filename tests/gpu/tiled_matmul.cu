// The kernel of tests/gpu/rewritten_speed.c: a matrix product in 32 x 32 tiles
// staged in shared memory, whose inner loop ptxas vectorises (16-byte
// shared-memory loads) only when it compiles the whole program: compiled
// as relocatable code, the same kernel is about a quarter slower.
extern "C" __global__ void tiled_matmul(const float *a, const float *b, float *c, int n)
{
    __shared__ float a_tile[32][32];
    __shared__ float b_tile[32][32];
    int row = blockIdx.y * 32 + threadIdx.y, col = blockIdx.x * 32 + threadIdx.x;
    float sum = 0.0f;
    for (int k0 = 0; k0 < n; k0 += 32) {
        a_tile[threadIdx.y][threadIdx.x] = a[(size_t)row * n + k0 + threadIdx.x];
        b_tile[threadIdx.y][threadIdx.x] = b[(size_t)(k0 + threadIdx.y) * n + col];
        __syncthreads();
        for (int k = 0; k < 32; k++)
            sum += a_tile[threadIdx.y][k] * b_tile[k][threadIdx.x];
        __syncthreads();
    }
    c[(size_t)row * n + col] = sum;
}
