// nbody_allpairs: all-pairs gravitational N-body in the style of the CUDA
// SDK's nbody sample (GPU Gems 3, chapter 31): bodies are float4 (x, y, z,
// mass) with float4 velocities; each thread owns one body and sums the
// softened accelerations from every body, walking the bodies in tiles of 256
// that its block stages in shared memory (one body per thread, then
// __syncthreads()); then it integrates its body with semi-implicit Euler
// (v += a dt, then p += v dt). Positions ping-pong between two buffers, so a
// step reads only the previous step's positions; velocities are updated in
// place by their owning thread. Every acceleration is one thread's sum over
// j = 0 .. N-1 in a fixed order, so the output does not depend on which GPU
// ran which block.
//
// Sizes: N = 131,072 bodies (512 blocks, four per SM of an H100; at 32,768
// the 128 blocks would give each SM one block, each GPU of a split nothing to
// gain, and the 10 steps only ~5 ms) in a uniform ball of radius 1, masses
// 0.5/N to 1.5/N, small random velocities, G = 1, softening eps = 0.01
// (eps^2 = 1e-4), dt = 0.001, 10 steps: 17.2 G interactions per step, 172 G
// in all. Device memory: two position buffers, the velocities and the
// accelerations, 8 MiB.
//
// Kernel and launch shape: integrate_bodies<<<512, 256>>> once per step
// (10 launches), 4 KiB of shared memory per block (the tile of 256 float4).
//
// Under a runtime that cuts each grid into contiguous block ranges: every
// slice reads all N positions (2 MiB) of the previous step, which the other
// GPUs wrote, and writes only its own bodies; compute (O(N^2)) dwarfs the
// data (O(N)), so this is the case where a split should pay, as long as the
// positions each GPU wrote reach every other GPU before the next step.
//
// Expected GPU time on one H100: about 16 instructions per interaction
// (3 FADD, 3 FFMA, rsqrtf, the cube and scale, 3 FFMA, a shared-memory
// broadcast load), issue-bound: 512 blocks fill the 132 SMs four deep,
// 4 x 256 x 131,072 interactions per SM take ~17 M cycles, ~8-9 ms per step,
// ~85 ms for the 10 (roughly 70-130 ms).
//
// Check: the GPU's accelerations of the first step are copied back and 16
// bodies spread over the grid are checked against a double-precision sum
// over all N bodies (relative 1e-3 on the acceleration vector's length);
// the hash is of the final positions (and of the final velocities).
//
// SCALE s (1 to 100, default 1): 10 s steps, to time 0.01 s (the nearly cold
// ball falls in: to about a third of its radius at s = 100, short of its
// free-fall time ~1.1); for s > 1 the last step's accelerations are checked
// too, from the positions it read (both copied back at the end): twice the
// CPU work of SCALE 1.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <cuda_runtime.h>

#include "tests/programs/program_check.h"

#define BLOCK_SIZE 256
#define SOFTENING_SQUARED 1e-4f

static uint32_t lcg_state = 4242u;
static uint32_t lcg()
{
    return (lcg_state = lcg_state * 1664525u + 1013904223u) >> 8;
}
// Uniform in [-1, 1) from 24 random bits, exact in float.
static float lcg_signed()
{
    return (float)lcg() / 8388608.0f - 1.0f;
}

// The acceleration of body bi due to body bj, added to ai.
__device__ inline float3 body_body_interaction(float3 ai, float4 bi, float4 bj)
{
    float3 r;
    r.x = bj.x - bi.x;
    r.y = bj.y - bi.y;
    r.z = bj.z - bi.z;
    float distSqr = r.x * r.x + r.y * r.y + r.z * r.z + SOFTENING_SQUARED;
    float invDist = rsqrtf(distSqr);
    float invDistCube = invDist * invDist * invDist;
    float s = bj.w * invDistCube;
    ai.x += r.x * s;
    ai.y += r.y * s;
    ai.z += r.z * s;
    return ai;
}

__global__ void integrate_bodies(const float4 *oldPos, float4 *newPos, float4 *vel, float4 *accel,
                                 int n, float dt)
{
    __shared__ float4 tile[BLOCK_SIZE];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float4 pos = oldPos[i];
    float3 acc = {0.0f, 0.0f, 0.0f};

    for (int t = 0; t < n / BLOCK_SIZE; t++) {
        tile[threadIdx.x] = oldPos[t * BLOCK_SIZE + threadIdx.x];
        __syncthreads();
#pragma unroll 8
        for (int j = 0; j < BLOCK_SIZE; j++)
            acc = body_body_interaction(acc, pos, tile[j]);
        __syncthreads();
    }

    float4 v = vel[i];
    v.x += acc.x * dt;
    v.y += acc.y * dt;
    v.z += acc.z * dt;
    pos.x += v.x * dt;
    pos.y += v.y * dt;
    pos.z += v.z * dt;
    vel[i] = v;
    newPos[i] = pos;
    accel[i] = make_float4(acc.x, acc.y, acc.z, 0.0f);
}

// The accelerations `acc` that step `step` computed from the positions
// `pos`, checked at `samples` bodies against a double-precision sum from the
// same float positions and masses; false (after saying so) if one is off.
static bool accelerations_ok(const std::vector<float4> &pos, const std::vector<float4> &acc, int n,
                             int samples, int step)
{
    for (int k = 0; k < samples; k++) {
        int i = k * (n / samples) + (k * 977) % (n / samples);
        double ax = 0, ay = 0, az = 0;
        for (int j = 0; j < n; j++) {
            double rx = (double)pos[j].x - pos[i].x, ry = (double)pos[j].y - pos[i].y,
                   rz = (double)pos[j].z - pos[i].z;
            double d2 = rx * rx + ry * ry + rz * rz + (double)SOFTENING_SQUARED;
            double s = pos[j].w / (d2 * sqrt(d2));
            ax += rx * s;
            ay += ry * s;
            az += rz * s;
        }
        double ex = acc[i].x - ax, ey = acc[i].y - ay, ez = acc[i].z - az;
        double err = sqrt(ex * ex + ey * ey + ez * ez), mag = sqrt(ax * ax + ay * ay + az * az);
        if (!(err <= 1e-3 * mag)) {
            printf("nbody_allpairs: WRONG acceleration of body %d", i);
            if (step > 0)
                printf(" in step %d", step);
            printf(" = (%.6g %.6g %.6g), expected (%.6g %.6g %.6g)\n", acc[i].x, acc[i].y, acc[i].z,
                   ax, ay, az);
            return false;
        }
    }
    return true;
}

// The largest SCALE (the optional argument; program_check.h).
#define MAX_SCALE 100

int main(int argc, char **argv)
{
    const int scale = program_scale(argc, argv, "nbody_allpairs", MAX_SCALE);
    const int n = 131072, steps = 10 * scale, samples = 16;
    const float dt = 0.001f;
    const size_t bytes = (size_t)n * sizeof(float4);

    // Positions uniform in the unit ball (rejection), mass in [0.5, 1.5) / n,
    // velocities uniform in [-0.05, 0.05)^3.
    std::vector<float4> pos(n), vel(n), acc(n);
    for (int i = 0; i < n; i++) {
        float x, y, z;
        do {
            x = lcg_signed();
            y = lcg_signed();
            z = lcg_signed();
        } while ((double)x * x + (double)y * y + (double)z * z >= 1.0); // exact squares
        float m = (1.0f + 0.5f * lcg_signed()) / n;
        pos[i] = make_float4(x, y, z, m);
        float vx = 0.05f * lcg_signed(); // one statement each: argument order is unspecified
        float vy = 0.05f * lcg_signed();
        float vz = 0.05f * lcg_signed();
        vel[i] = make_float4(vx, vy, vz, 0.0f);
    }

    float4 *d_pos[2], *d_vel, *d_acc;
    CHECK(cudaMalloc(&d_pos[0], bytes));
    CHECK(cudaMalloc(&d_pos[1], bytes));
    CHECK(cudaMalloc(&d_vel, bytes));
    CHECK(cudaMalloc(&d_acc, bytes));
    CHECK(cudaMemcpy(d_pos[0], pos.data(), bytes, cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(d_vel, vel.data(), bytes, cudaMemcpyHostToDevice));

    const int blocks = n / BLOCK_SIZE;
    for (int step = 0; step < steps; step++) {
        integrate_bodies<<<blocks, BLOCK_SIZE>>>(d_pos[step % 2], d_pos[(step + 1) % 2], d_vel,
                                                 d_acc, n, dt);
        CHECK(cudaGetLastError());
        if (step == 0) // the first step's accelerations, for the check
            CHECK(cudaMemcpy(acc.data(), d_acc, bytes, cudaMemcpyDeviceToHost));
    }
    std::vector<float4> final_pos(n), final_vel(n);
    CHECK(cudaMemcpy(final_pos.data(), d_pos[steps % 2], bytes, cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(final_vel.data(), d_vel, bytes, cudaMemcpyDeviceToHost));
    // For SCALE > 1 the last step's accelerations and the positions it read
    // (still in the other buffer), for the check.
    std::vector<float4> last_pos, last_acc;
    if (scale > 1) {
        last_pos.resize(n);
        last_acc.resize(n);
        CHECK(cudaMemcpy(last_pos.data(), d_pos[(steps - 1) % 2], bytes, cudaMemcpyDeviceToHost));
        CHECK(cudaMemcpy(last_acc.data(), d_acc, bytes, cudaMemcpyDeviceToHost));
    }
    CHECK(cudaFree(d_pos[0]));
    CHECK(cudaFree(d_pos[1]));
    CHECK(cudaFree(d_vel));
    CHECK(cudaFree(d_acc));

    // Centre of mass and momentum are (nearly) conserved; print them as the
    // readable part of the result.
    double cm[3] = {0, 0, 0}, mom[3] = {0, 0, 0};
    for (int i = 0; i < n; i++) {
        double m = final_pos[i].w;
        cm[0] += m * final_pos[i].x;
        cm[1] += m * final_pos[i].y;
        cm[2] += m * final_pos[i].z;
        mom[0] += m * final_vel[i].x;
        mom[1] += m * final_vel[i].y;
        mom[2] += m * final_vel[i].z;
    }
    printf("nbody_allpairs: n=%d steps=%d centre_of_mass=(%.6f %.6f %.6f) hash %016llx\n", n, steps,
           cm[0], cm[1], cm[2], (unsigned long long)fnv1a(final_pos.data(), bytes));
    printf("nbody_allpairs: momentum=(%.6f %.6f %.6f) hash %016llx\n", mom[0], mom[1], mom[2],
           (unsigned long long)fnv1a(final_vel.data(), bytes));

    // The first step's accelerations; for SCALE > 1 also the last step's.
    if (!accelerations_ok(pos, acc, n, samples, 0) ||
        (scale > 1 && !accelerations_ok(last_pos, last_acc, n, samples, steps - 1)))
        return 1;
    printf("nbody_allpairs: check ok\n");
    return 0;
}
