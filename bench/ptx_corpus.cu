// A large, realistic PTX module for the rewrite benchmark: CUB's sort, scan,
// reduce, histogram and select kernels for many types (about 10 MB of PTX
// for compute_90). Compiled with -ptx only; never run.
#include <cub/cub.cuh>

template <typename K, typename V> void sort_pairs(K *k, V *v, int n)
{
    size_t bytes = 0;
    cub::DeviceRadixSort::SortPairs(nullptr, bytes, k, k, v, v, n);
    cub::DeviceRadixSort::SortPairsDescending(nullptr, bytes, k, k, v, v, n);
}

template <typename T> void reduce_scan(T *in, T *out, int *count, int n)
{
    size_t bytes = 0;
    cub::DeviceReduce::Sum(nullptr, bytes, in, out, n);
    cub::DeviceReduce::Max(nullptr, bytes, in, out, n);
    cub::DeviceScan::InclusiveSum(nullptr, bytes, in, out, n);
    cub::DeviceScan::ExclusiveSum(nullptr, bytes, in, out, n);
    cub::DeviceHistogram::HistogramEven(nullptr, bytes, in, count, 10, (T)0, (T)100, n);
    cub::DeviceSelect::Unique(nullptr, bytes, in, out, count, n);
}

#define SORT(K) \
    template void sort_pairs<K, float>(K *, float *, int); \
    template void sort_pairs<K, double>(K *, double *, int); \
    template void sort_pairs<K, int>(K *, int *, int);
SORT(int)
SORT(unsigned int)
SORT(long long)
SORT(unsigned long long)
SORT(float)
SORT(double)
SORT(short)

template void reduce_scan<int>(int *, int *, int *, int);
template void reduce_scan<unsigned int>(unsigned int *, unsigned int *, int *, int);
template void reduce_scan<long long>(long long *, long long *, int *, int);
template void reduce_scan<float>(float *, float *, int *, int);
template void reduce_scan<double>(double *, double *, int *, int);
template void reduce_scan<short>(short *, short *, int *, int);
