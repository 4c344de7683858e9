// nbody: all-pairs gravitational n-body, one time step per launch: each
// thread owns a body, sums the pull of every body (positions staged through
// shared memory one tile of 256 at a time, always in body order), then
// updates its velocity and position into the other pair of buffers
// (ping-pong). Compute-bound: every GPU reads all positions, a small array.
// The arithmetic uses explicit round-to-nearest intrinsics and one rsqrtf, so
// the result is bit-identical on any number of GPUs and the printed checksum
// can be compared. The check recomputes the last step on the CPU in double,
// from the state before it, for every body of small systems and 128 bodies of
// large ones (at the edges of 2, 4 and 8-way splits and others); each
// component may differ by 8 standard deviations of the float sum's rounding
// plus 16 rounding units of every term.
#include <cmath>
#include "example_runtime.h"

static const example_defaults defaults = {
    "nbody", "number of bodies", 1ull << 19, 2048, 4, 2, 3, 2,
};

constexpr unsigned THREADS = 256;
constexpr float TIME_STEP = 0.001f;
constexpr float SOFTENING_SQUARED = 0.01f;

// pos: x, y, z and mass; vel: x, y, z and 0.
__global__ void nbody_step(const float4 *pos, const float4 *vel, float4 *new_pos, float4 *new_vel,
                           int n, float dt, float softening_squared)
{
    __shared__ float4 tile[THREADS];
    int i = blockIdx.x * THREADS + threadIdx.x;
    float4 p = pos[min(i, n - 1)]; // threads past the end help load tiles, store nothing
    float ax = 0.0f, ay = 0.0f, az = 0.0f;
    for (int tile_start = 0; tile_start < n; tile_start += THREADS) {
        int j = tile_start + threadIdx.x;
        if (j < n)
            tile[threadIdx.x] = pos[j];
        __syncthreads();
        int count = min((int)THREADS, n - tile_start);
#pragma unroll 8
        for (int k = 0; k < count; k++) {
            float4 q = tile[k];
            float dx = __fsub_rn(q.x, p.x), dy = __fsub_rn(q.y, p.y), dz = __fsub_rn(q.z, p.z);
            float r2 = __fmaf_rn(dx, dx, __fmaf_rn(dy, dy, __fmaf_rn(dz, dz, softening_squared)));
            float inv_r = rsqrtf(r2);
            float strength = __fmul_rn(q.w, __fmul_rn(__fmul_rn(inv_r, inv_r), inv_r));
            ax = __fmaf_rn(dx, strength, ax);
            ay = __fmaf_rn(dy, strength, ay);
            az = __fmaf_rn(dz, strength, az);
        }
        __syncthreads();
    }
    if (i < n) {
        float4 v = vel[i];
        float vx = __fmaf_rn(ax, dt, v.x), vy = __fmaf_rn(ay, dt, v.y), vz = __fmaf_rn(az, dt, v.z);
        new_vel[i] = make_float4(vx, vy, vz, 0.0f);
        new_pos[i] = make_float4(__fmaf_rn(vx, dt, p.x), __fmaf_rn(vy, dt, p.y),
                                 __fmaf_rn(vz, dt, p.z), p.w);
    }
}

// A number in [0, 1) from the hash of (body, what).
static float unit_random(size_t body, unsigned what)
{
    return (float)(example_hash(4 * (uint64_t)body + what) >> 40) * (1.0f / (1 << 24));
}

// Bodies in the cube [-1, 1)^3 with small random velocities and masses
// around 1/n (a total mass near 1).
static void initial_state(size_t n, std::vector<float4> &pos, std::vector<float4> &vel)
{
    example_parallel_for(n, [&](size_t first, size_t last) {
        for (size_t i = first; i < last; i++) {
            float mass = (0.5f + unit_random(i, 3)) / (float)n;
            pos[i] = make_float4(2 * unit_random(i, 0) - 1, 2 * unit_random(i, 1) - 1,
                                 2 * unit_random(i, 2) - 1, mass);
            uint64_t h = example_hash(~(uint64_t)i);
            vel[i] = make_float4(((float)(h & 0xffff) / 65536 - 0.5f) * 0.1f,
                                 ((float)((h >> 16) & 0xffff) / 65536 - 0.5f) * 0.1f,
                                 ((float)((h >> 32) & 0xffff) / 65536 - 0.5f) * 0.1f, 0.0f);
        }
    });
}

// Recomputes body i's step from (pos, vel) in double and compares it with
// (new_pos, new_vel); returns whether every component is within bounds.
static bool check_body(const std::vector<float4> &pos, const std::vector<float4> &vel,
                       const std::vector<float4> &new_pos, const std::vector<float4> &new_vel,
                       size_t i)
{
    const double u = std::ldexp(1.0, -24), dt = TIME_STEP, eps2 = SOFTENING_SQUARED;
    size_t n = pos.size();
    const double pi[3] = {pos[i].x, pos[i].y, pos[i].z};
    double a[3] = {0, 0, 0}, term_magnitude[3] = {0, 0, 0}, partial_squares[3] = {0, 0, 0};
    for (size_t j = 0; j < n; j++) {
        double d[3] = {pos[j].x - pi[0], pos[j].y - pi[1], pos[j].z - pi[2]};
        double r2 = d[0] * d[0] + d[1] * d[1] + d[2] * d[2] + eps2;
        double strength = pos[j].w / (r2 * std::sqrt(r2));
        for (int c = 0; c < 3; c++) {
            a[c] += d[c] * strength;
            term_magnitude[c] += std::fabs(d[c] * strength);
            partial_squares[c] += a[c] * a[c];
        }
    }
    const double v[3] = {vel[i].x, vel[i].y, vel[i].z};
    const double got_v[3] = {new_vel[i].x, new_vel[i].y, new_vel[i].z};
    const double got_p[3] = {new_pos[i].x, new_pos[i].y, new_pos[i].z};
    bool right = new_pos[i].w == pos[i].w && new_vel[i].w == 0.0f;
    for (int c = 0; c < 3; c++) {
        double allowed_a = 8 * u * std::sqrt(partial_squares[c]) + 16 * u * term_magnitude[c];
        double want_v = v[c] + a[c] * dt;
        double allowed_v = dt * allowed_a + 2 * u * std::fabs(want_v) + 1e-30;
        double want_p = pi[c] + want_v * dt;
        double allowed_p = dt * allowed_v + 2 * u * std::fabs(want_p) + 1e-30;
        right = right && std::fabs(got_v[c] - want_v) <= allowed_v &&
                std::fabs(got_p[c] - want_p) <= allowed_p;
    }
    return right;
}

int main(int argc, char **argv)
{
    example_options options = example_parse_options(argc, argv, &defaults);
    size_t n = options.size;
    if (n > (1u << 24))
        example_bad_size(&defaults, "at most 16777216 bodies");
    unsigned blocks = (unsigned)((n + THREADS - 1) / THREADS);

    std::vector<float4> pos(n), vel(n), prev_pos(n), prev_vel(n);
    initial_state(n, pos, vel);
    cudaStream_t stream;
    EXAMPLE_CHECK(cudaStreamCreate(&stream));
    float4 *dpos[2], *dvel[2];
    for (int b = 0; b < 2; b++) {
        EXAMPLE_CHECK(cudaMalloc(&dpos[b], n * sizeof(float4)));
        EXAMPLE_CHECK(cudaMalloc(&dvel[b], n * sizeof(float4)));
    }
    EXAMPLE_CHECK(
        cudaMemcpyAsync(dpos[0], pos.data(), n * sizeof(float4), cudaMemcpyHostToDevice, stream));
    EXAMPLE_CHECK(
        cudaMemcpyAsync(dvel[0], vel.data(), n * sizeof(float4), cudaMemcpyHostToDevice, stream));

    unsigned long long steps_done = 0;
    auto launch_once = [&] {
        int from = steps_done % 2, to = 1 - from;
        nbody_step<<<blocks, THREADS, 0, stream>>>(dpos[from], dvel[from], dpos[to], dvel[to],
                                                   (int)n, TIME_STEP, SOFTENING_SQUARED);
        steps_done++;
    };
    launch_once(); // warm-up, not timed
    EXAMPLE_CHECK(cudaGetLastError());
    EXAMPLE_CHECK(cudaStreamSynchronize(stream));
    float ms = example_time_launches(stream, options, launch_once);

    // The state after the last step, and the one before it.
    int last = steps_done % 2;
    EXAMPLE_CHECK(cudaMemcpyAsync(pos.data(), dpos[last], n * sizeof(float4),
                                  cudaMemcpyDeviceToHost, stream));
    EXAMPLE_CHECK(cudaMemcpyAsync(vel.data(), dvel[last], n * sizeof(float4),
                                  cudaMemcpyDeviceToHost, stream));
    EXAMPLE_CHECK(cudaMemcpyAsync(prev_pos.data(), dpos[1 - last], n * sizeof(float4),
                                  cudaMemcpyDeviceToHost, stream));
    EXAMPLE_CHECK(cudaMemcpyAsync(prev_vel.data(), dvel[1 - last], n * sizeof(float4),
                                  cudaMemcpyDeviceToHost, stream));
    EXAMPLE_CHECK(cudaStreamSynchronize(stream));

    bool every_body = n <= 8192;
    std::vector<size_t> bodies;
    if (every_body)
        for (size_t i = 0; i < n; i++)
            bodies.push_back(i);
    else
        bodies = example_indices_to_check(n, 0, n - 1, 128);
    example_mismatches wrong = example_find_mismatches(bodies.size(), [&](size_t k) {
        return !check_body(prev_pos, prev_vel, pos, vel, bodies[k]);
    });
    char checked[64];
    if (every_body)
        std::snprintf(checked, sizeof checked, "every body");
    else
        std::snprintf(checked, sizeof checked, "%zu bodies", bodies.size());
    if (wrong.count) {
        size_t i = bodies[wrong.first];
        std::fprintf(stderr,
                     "nbody: %zu bodies wrong; the first, %zu: position (%.9g, %.9g, %.9g), "
                     "velocity (%.9g, %.9g, %.9g)\n",
                     wrong.count, i, pos[i].x, pos[i].y, pos[i].z, vel[i].x, vel[i].y, vel[i].z);
        std::printf(
            "nbody: %zu bodies, %llu steps, last step of %s checked against the CPU: FAIL\n", n,
            steps_done, checked);
        return 1;
    }
    uint64_t checksum = example_checksum(pos.data(), n * sizeof(float4), EXAMPLE_CHECKSUM_START);
    checksum = example_checksum(vel.data(), n * sizeof(float4), checksum);
    std::printf("nbody: %zu bodies, %llu steps, last step of %s checked against the CPU: PASS "
                "checksum 0x%016llx\n",
                n, steps_done, checked, (unsigned long long)checksum);
    example_print_time(&defaults, &options, ms);
    for (int b = 0; b < 2; b++) {
        EXAMPLE_CHECK(cudaFree(dpos[b]));
        EXAMPLE_CHECK(cudaFree(dvel[b]));
    }
    EXAMPLE_CHECK(cudaStreamDestroy(stream));
    return 0;
}
