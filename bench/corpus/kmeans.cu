// kmeans: Lloyd's k-means in the style of Rodinia's CUDA "kmeans": the points
// go up once, an invert_mapping kernel turns them from point-major into
// feature-major order (so that a warp reading feature f of 32 consecutive
// points reads 128 consecutive bytes), and each iteration the host uploads the
// current centroids, one kernel assigns every point to its nearest centroid,
// the labels come back, and the host recomputes the centroids (double sums
// over the points in index order, a cluster left empty keeps its centroid).
// The first NCLUSTERS points are the initial centroids, as in Rodinia.
// Sizes: 2,097,152 points of 16 float features (128 MiB, held twice on the
// device: point-major and feature-major), 1024 clusters, 20 iterations.
// Rodinia's inputs ask for a handful of clusters; with 64 the assignments
// would take about 0.2 ms an iteration on an H100, too little GPU work to
// time, so 1024 (a vector-quantisation-sized codebook).
// Kernels and launch shapes: invert_mapping once, kmeans_point 20 times, both
// 1D grids of 8192 blocks of 256 threads, one thread per point. kmeans_point
// keeps its point's 16 features in registers and walks the centroids in tiles
// of 256 staged in shared memory (16 KiB), the label being the first centroid
// at the least float distance (ties go to the lowest index).
// Expected GPU time on one H100: each assignment is 2M x 1024 x 16 float
// subtract, FMA and shared-memory load triples, bound by the shared-memory
// loads (one broadcast load per feature) at about 3-5 ms (the FP32 pipes alone
// would allow 2.3 ms), so about 60-100 ms for the 20, plus about 15-30 ms of
// copies (128 MiB up once, 8 MiB of labels down per iteration). Device
// memory: about 264 MiB.
// Under a runtime that cuts each grid into contiguous block ranges: a slice of
// kmeans_point reads its points' 16 feature runs (16 separate pieces of the
// feature-major array, the ones the same slice of invert_mapping wrote) and
// all the centroids (64 KiB that the host replaces every iteration, needed by
// every slice), and writes a contiguous run of labels that the host then reads
// back whole: a broadcast, a kernel and a gather per iteration, the host
// waiting on the labels before the next upload.
// SCALE s (1 to 100, default 1): 20 s iterations (the labels settle, the
// work per iteration stays); the sampled check runs on 20 of them (every
// s-th, the last included), but the host's centroid update, ~2M x 16 double
// additions, is part of every iteration.
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <cuda_runtime.h>

#include "tests/programs/program_check.h"

#define NPOINTS 2097152
#define NFEATURES 16
#define NCLUSTERS 1024
#define NITERATIONS 20
#define THREADS_PER_BLOCK 256
#define CLUSTER_TILE 256

static uint32_t lcg_state = 4242u;
static uint32_t lcg()
{
    return lcg_state = lcg_state * 1664525u + 1013904223u;
}
static float lcg_unit() // in [0, 1)
{
    return (float)(lcg() >> 8) / 16777216.0f;
}

// Point-major [npoints][NFEATURES] to feature-major [NFEATURES][npoints].
__global__ void invert_mapping(const float *input, float *output, int npoints)
{
    int point = blockIdx.x * blockDim.x + threadIdx.x;
    if (point < npoints)
        for (int f = 0; f < NFEATURES; f++)
            output[(size_t)f * npoints + point] = input[(size_t)point * NFEATURES + f];
}

// membership[point] = the centroid nearest to the point (squared Euclidean
// distance in float, the lowest index among equals).
__global__ void kmeans_point(const float *features, const float *centroids, int *membership,
                             int npoints)
{
    __shared__ float tile[CLUSTER_TILE * NFEATURES];
    int point = blockIdx.x * blockDim.x + threadIdx.x;

    float p[NFEATURES];
#pragma unroll
    for (int f = 0; f < NFEATURES; f++)
        p[f] = point < npoints ? features[(size_t)f * npoints + point] : 0.0f;

    float best_dist = FLT_MAX;
    int best = 0;
    for (int base = 0; base < NCLUSTERS; base += CLUSTER_TILE) {
        __syncthreads(); // the previous tile is no longer read
        for (int k = threadIdx.x; k < CLUSTER_TILE * NFEATURES; k += blockDim.x)
            tile[k] = centroids[base * NFEATURES + k];
        __syncthreads();
        for (int c = 0; c < CLUSTER_TILE; c++) {
            float dist = 0.0f;
#pragma unroll
            for (int f = 0; f < NFEATURES; f++) {
                float diff = p[f] - tile[c * NFEATURES + f];
                dist += diff * diff;
            }
            if (dist < best_dist) {
                best_dist = dist;
                best = base + c;
            }
        }
    }
    if (point < npoints)
        membership[point] = best;
}

// The points whose labels the check recomputes in iteration it: one in each
// run of 4096 (every 16th block), at an offset that moves each iteration.
#define SAMPLES (NPOINTS / 4096)
static int sample_point(int it, int k)
{
    return k * 4096 + (it * 1237 + 91) % 4096;
}

// The largest SCALE (the optional argument; program_check.h).
#define MAX_SCALE 100

int main(int argc, char **argv)
{
    const int scale = program_scale(argc, argv, "kmeans", MAX_SCALE);
    const int iterations = NITERATIONS * scale;
    // Points scattered around NCLUSTERS hidden centres in [0, 16)^16, each
    // feature within 4 of its centre's: overlapping groups, so the labels keep
    // moving for a good many iterations.
    std::vector<float> centres((size_t)NCLUSTERS * NFEATURES);
    for (auto &v : centres)
        v = 16.0f * lcg_unit();
    std::vector<float> features((size_t)NPOINTS * NFEATURES);
    for (int i = 0; i < NPOINTS; i++) {
        int g = (int)(((uint64_t)lcg() * NCLUSTERS) >> 32);
        for (int f = 0; f < NFEATURES; f++)
            features[(size_t)i * NFEATURES + f] =
                centres[(size_t)g * NFEATURES + f] + 8.0f * (lcg_unit() - 0.5f);
    }
    std::vector<float> centroids(features.begin(), features.begin() + NCLUSTERS * NFEATURES);

    float *d_features, *d_flipped, *d_centroids;
    int *d_membership;
    CHECK(cudaMalloc(&d_features, (size_t)NPOINTS * NFEATURES * sizeof(float)));
    CHECK(cudaMalloc(&d_flipped, (size_t)NPOINTS * NFEATURES * sizeof(float)));
    CHECK(cudaMalloc(&d_centroids, NCLUSTERS * NFEATURES * sizeof(float)));
    CHECK(cudaMalloc(&d_membership, NPOINTS * sizeof(int)));
    CHECK(cudaMemcpy(d_features, features.data(), (size_t)NPOINTS * NFEATURES * sizeof(float),
                     cudaMemcpyHostToDevice));

    dim3 block(THREADS_PER_BLOCK);
    dim3 grid((NPOINTS + block.x - 1) / block.x);
    invert_mapping<<<grid, block>>>(d_features, d_flipped, NPOINTS);
    CHECK(cudaGetLastError());

    std::vector<int> membership(NPOINTS), previous(NPOINTS, -1);
    std::vector<double> sums((size_t)NCLUSTERS * NFEATURES), dist(NCLUSTERS);
    std::vector<long long> counts(NCLUSTERS);
    int moved = 0, wrong = 0, bad_labels = 0, near_ties = 0;
    for (int it = 0; it < iterations; it++) {
        CHECK(cudaMemcpy(d_centroids, centroids.data(), NCLUSTERS * NFEATURES * sizeof(float),
                         cudaMemcpyHostToDevice));
        kmeans_point<<<grid, block>>>(d_flipped, d_centroids, d_membership, NPOINTS);
        CHECK(cudaGetLastError());
        CHECK(cudaMemcpy(membership.data(), d_membership, NPOINTS * sizeof(int),
                         cudaMemcpyDeviceToHost));

        // CPU reference for this iteration, in double, on a sample of points
        // against the centroids just uploaded: the GPU's label must be a
        // centroid at the least distance. The float distance (16 squares of
        // float differences) is within about 2e-6 of the exact one, so a
        // label within 1e-5 of the least distance is a near tie that float
        // rounding may decide either way; any other label is wrong. Checked
        // in NITERATIONS of the iterations: every scale-th (all at SCALE 1).
        const int samples = it % scale == scale - 1 ? SAMPLES : 0;
        for (int k = 0; k < samples; k++) {
            int i = sample_point(it, k);
            const float *x = &features[(size_t)i * NFEATURES];
            int nearest = 0;
            for (int c = 0; c < NCLUSTERS; c++) {
                double d = 0;
                for (int f = 0; f < NFEATURES; f++) {
                    double diff = (double)x[f] - (double)centroids[(size_t)c * NFEATURES + f];
                    d += diff * diff;
                }
                dist[c] = d;
                if (d < dist[nearest])
                    nearest = c;
            }
            int label = membership[i];
            if (label < 0 || label >= NCLUSTERS ||
                !(dist[label] <= dist[nearest] * (1.0 + 1e-5) + 1e-6)) {
                if (wrong++ < 5)
                    fprintf(stderr,
                            "kmeans: iteration %d: point %d labelled %d, nearest is %d at %.9g\n",
                            it, i, label, nearest, dist[nearest]);
            } else if (label != nearest) {
                near_ties++;
            }
        }

        // New centroids from the labels, summed in point order.
        moved = 0;
        for (auto &v : sums)
            v = 0;
        for (auto &v : counts)
            v = 0;
        for (int i = 0; i < NPOINTS; i++) {
            int c = membership[i];
            if (c < 0 || c >= NCLUSTERS) {
                if (bad_labels++ < 5)
                    fprintf(stderr, "kmeans: iteration %d: point %d has label %d\n", it, i, c);
                continue;
            }
            moved += c != previous[i];
            counts[c]++;
            for (int f = 0; f < NFEATURES; f++)
                sums[(size_t)c * NFEATURES + f] += features[(size_t)i * NFEATURES + f];
        }
        for (int c = 0; c < NCLUSTERS; c++)
            if (counts[c])
                for (int f = 0; f < NFEATURES; f++)
                    centroids[(size_t)c * NFEATURES + f] =
                        (float)(sums[(size_t)c * NFEATURES + f] / (double)counts[c]);
        previous.swap(membership);
    }
    // previous now holds the last iteration's labels.
    CHECK(cudaFree(d_features));
    CHECK(cudaFree(d_flipped));
    CHECK(cudaFree(d_centroids));
    CHECK(cudaFree(d_membership));

    std::vector<long long> rounded(centroids.size());
    for (size_t k = 0; k < centroids.size(); k++)
        rounded[k] = llround((double)centroids[k] * 1e4);
    printf("kmeans: labels of %d points after %d iterations (%d moved in the last), hash %016llx\n",
           NPOINTS, iterations, moved,
           (unsigned long long)fnv1a(previous.data(), NPOINTS * sizeof(int)));
    printf("kmeans: centroids %d x %d rounded to 1e-4, hash %016llx\n", NCLUSTERS, NFEATURES,
           (unsigned long long)fnv1a(rounded.data(), rounded.size() * sizeof(long long)));

    if (near_ties)
        fprintf(stderr, "kmeans: %d sampled labels decided by a near tie\n", near_ties);
    if (wrong || bad_labels) {
        printf("kmeans: WRONG %d of %d sampled labels, %d labels out of range\n", wrong,
               NITERATIONS * SAMPLES, bad_labels);
        return 1;
    }
    printf("kmeans: check ok\n");
    return 0;
}
