/* example_common.h: what every example shares, in C so that the driver-API
 * example (plain C) can use it too: the command-line options, a
 * deterministic input hash, the checksum of a result, and the timing line.
 *
 * Output format, read by tests/gpu-examples.sh and bench/run-scaling.sh:
 *   - result lines on stdout, deterministic for given options (never a GPU
 *     count, SM count or time), e.g. "saxpy: ...: PASS checksum 0x0123...";
 *   - exactly one timing line on stdout:
 *     "time: NAME kernel_ms=MS iterations=I repeats=R", MS being the median
 *     over R timed loops of I launches each, divided by I;
 *   - diagnostics on stderr.
 * Exit status: 0 the result is right, 1 it is wrong (or a call failed), 2 bad
 * arguments (with a usage line). */
#ifndef MGPU_EXAMPLE_COMMON_H
#define MGPU_EXAMPLE_COMMON_H

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* What one run does: the problem size (each example says what it counts),
 * the launches in one timed loop, and how many timed loops. */
struct example_options {
    unsigned long long size;
    int iterations;
    int repeats;
    int quick;
};

/* An example's name, what --size counts, and its defaults, each followed by
 * its --quick value: the size (the full one is sized for issue 5's targets,
 * the quick one for tests), the launches per timed loop, the timed loops.
 * The examples give them in this order. */
struct example_defaults {
    const char *name;
    const char *size_meaning;
    unsigned long long size, quick_size;
    int iterations, quick_iterations;
    int repeats, quick_repeats;
};

static inline void example_usage(FILE *to, const struct example_defaults *d)
{
    fprintf(to,
            "usage: %s [--quick] [--size N] [--iterations N] [--repeats N]\n"
            "  --size N        %s (default %llu; with --quick %llu)\n"
            "  --iterations N  launches per timed loop (default %d; with --quick %d)\n"
            "  --repeats N     timed loops, the median is reported (default %d; with --quick %d)\n",
            d->name, d->size_meaning, d->size, d->quick_size, d->iterations, d->quick_iterations,
            d->repeats, d->quick_repeats);
}

/* Whole decimal numbers from 1 to max only. */
static inline int example_parse_count(const char *text, unsigned long long max,
                                      unsigned long long *value)
{
    char *end = NULL;
    if (text == NULL || text[0] < '0' || text[0] > '9')
        return 0;
    errno = 0;
    unsigned long long v = strtoull(text, &end, 10);
    if (*end != '\0' || errno == ERANGE || v == 0 || v > max)
        return 0;
    *value = v;
    return 1;
}

/* Reads the options; exits 2 with the usage line on a bad one, 0 after
 * printing it for --help. */
static inline struct example_options example_parse_options(int argc, char **argv,
                                                           const struct example_defaults *d)
{
    struct example_options o;
    unsigned long long size = 0, iterations = 0, repeats = 0;
    o.quick = 0;
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        unsigned long long *value = NULL, max = 0;
        if (strcmp(arg, "--quick") == 0) {
            o.quick = 1;
            continue;
        }
        if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
            example_usage(stdout, d);
            exit(0);
        }
        if (strcmp(arg, "--size") == 0)
            value = &size, max = ~0ull;
        else if (strcmp(arg, "--iterations") == 0)
            value = &iterations, max = 1000000;
        else if (strcmp(arg, "--repeats") == 0)
            value = &repeats, max = 1000;
        if (value == NULL) {
            fprintf(stderr, "%s: unknown argument '%s'\n", d->name, arg);
            example_usage(stderr, d);
            exit(2);
        }
        if (!example_parse_count(i + 1 < argc ? argv[i + 1] : NULL, max, value)) {
            fprintf(stderr, "%s: %s needs a whole number from 1 to %llu, not '%s'\n", d->name, arg,
                    max, i + 1 < argc ? argv[i + 1] : "");
            example_usage(stderr, d);
            exit(2);
        }
        i++;
    }
    o.size = size ? size : o.quick ? d->quick_size : d->size;
    o.iterations = iterations ? (int)iterations : o.quick ? d->quick_iterations : d->iterations;
    o.repeats = repeats ? (int)repeats : o.quick ? d->quick_repeats : d->repeats;
    return o;
}

/* For an option value that parses but that this example cannot use. */
static inline void example_bad_size(const struct example_defaults *d, const char *why)
{
    fprintf(stderr, "%s: %s\n", d->name, why);
    example_usage(stderr, d);
    exit(2);
}

/* Launches in a whole run: one untimed warm-up, then the timed loops. */
static inline unsigned long long example_total_launches(const struct example_options *o)
{
    return 1 + (unsigned long long)o->iterations * (unsigned long long)o->repeats;
}

/* A well-mixed 64-bit value for index i: the examples make their inputs from
 * it, so that every run (and the CPU reference) sees the same data. */
static inline uint64_t example_hash(uint64_t i)
{
    uint64_t x = i * 0x9e3779b97f4a7c15ull + 0x632be59bd9b4e019ull;
    x = (x ^ (x >> 31)) * 0xd6e8feb86659fd93ull;
    x = (x ^ (x >> 29)) * 0xcf1bbcdcb7a56463ull;
    return x ^ (x >> 32);
}

#define EXAMPLE_CHECKSUM_START 0xcbf29ce484222325ull

/* FNV-1a (64-bit) over the bytes taken 8 at a time as little-endian words (a
 * shorter tail byte by byte): equal outputs give equal checksums, and one
 * flipped bit changes it. Continue a checksum by passing it as `hash`. */
static inline uint64_t example_checksum(const void *data, size_t bytes, uint64_t hash)
{
    const unsigned char *p = (const unsigned char *)data;
    const uint64_t prime = 0x100000001b3ull;
    size_t words = bytes / 8;
    for (size_t i = 0; i < words; i++) {
        uint64_t w;
        memcpy(&w, p + 8 * i, 8);
        hash = (hash ^ w) * prime;
    }
    for (size_t i = words * 8; i < bytes; i++)
        hash = (hash ^ p[i]) * prime;
    return hash;
}

static inline int example_compare_floats(const void *a, const void *b)
{
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

/* The median of n per-launch times (sorts them). */
static inline float example_median(float *ms, int n)
{
    qsort(ms, (size_t)n, sizeof *ms, example_compare_floats);
    return n % 2 ? ms[n / 2] : (ms[n / 2 - 1] + ms[n / 2]) / 2;
}

static inline void example_print_time(const struct example_defaults *d,
                                      const struct example_options *o, float ms_per_launch)
{
    printf("time: %s kernel_ms=%.4f iterations=%d repeats=%d\n", d->name, ms_per_launch,
           o->iterations, o->repeats);
}

#endif
