/* Owns the fatbin container format: header and entry layouts, the walk over
 * containers and entries, and decompressing an entry with libzstd or liblz4.
 * Layout (little-endian), as nvcc 11 to 13 write it:
 *   container: u32 magic 0xBA55ED50, u16 version 1, u16 header size (16),
 *              u64 size of the entries that follow
 *   entry:     u16 kind (1 PTX, 2 ELF), u16, u32 header size (64, 80, 112),
 *              u64 payload size (padded to 8), u32 compressed size, u32,
 *              u16 minor, u16 major, u32 arch, u32 u32 (name), u64 flags,
 *              u64, u64 uncompressed size; the payload follows the header.
 *   flags:     0x8000 payload compressed with zstd, 0x2000 with LZ4. */
#include "ptx/fatbin.h"

#include <lz4.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>
#include <zstd_errors.h> /* ZSTD_getErrorCode: to tell a buffer too small from corrupt data */

#define CONTAINER_HEADER 16
#define ENTRY_HEADER_MIN 64
#define FLAG_ZSTD 0x8000u
#define FLAG_LZ4 0x2000u
/* No single GPU code object comes near this; larger sizes are corruption. */
#define MAX_CODE_SIZE ((size_t)1 << 32)
/* LZ4 cannot expand more than 255 times; nvcc's zstd frames state their
 * size. A header claiming more is corrupt, and is refused before any memory
 * is taken for it. */
#define MAX_EXPANSION 255

static uint16_t get16(const unsigned char *p)
{
    return (uint16_t)(p[0] | p[1] << 8);
}
static uint32_t get32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static uint64_t get64(const unsigned char *p)
{
    return get32(p) | (uint64_t)get32(p + 4) << 32;
}

size_t mgpu_fatbin_container_size(const void *data, size_t avail)
{
    const unsigned char *p = data;
    if (avail < CONTAINER_HEADER || get32(p) != MGPU_FATBIN_MAGIC)
        return 0;
    uint16_t header = get16(p + 6);
    uint64_t body = get64(p + 8);
    if (header < CONTAINER_HEADER || header > avail || body > avail - header)
        return 0;
    return header + (size_t)body;
}

static int fail(char *err, size_t errlen, const char *what, size_t offset)
{
    snprintf(err, errlen, "corrupt fatbin: %s at byte %zu", what, offset);
    return -1;
}

/* Walks the entries of one container; returns the entry count or -1. */
static long walk_container(const unsigned char *base, size_t at, size_t container,
                           int (*fn)(const struct mgpu_fatbin_entry *, void *), void *ctx,
                           int *stop, char *err, size_t errlen)
{
    const unsigned char *c = base + at;
    size_t end = get16(c + 6) + (size_t)get64(c + 8);
    size_t pos = get16(c + 6);
    long count = 0;
    while (pos < end && !*stop) {
        if (end - pos < ENTRY_HEADER_MIN)
            return fail(err, errlen, "entry header cut short", at + pos);
        const unsigned char *e = c + pos;
        uint32_t header = get32(e + 4);
        uint64_t padded = get64(e + 8);
        if (header < ENTRY_HEADER_MIN || header > end - pos)
            return fail(err, errlen, "entry header size out of range", at + pos);
        if (padded > end - pos - header)
            return fail(err, errlen, "entry payload runs past its container", at + pos);
        struct mgpu_fatbin_entry entry;
        memset(&entry, 0, sizeof entry);
        uint16_t kind = get16(e);
        uint64_t flags = get64(e + 40);
        entry.kind = kind == 1 ? MGPU_CODE_PTX : MGPU_CODE_ELF;
        entry.stored_kind = kind;
        entry.version_minor = get16(e + 24);
        entry.version_major = get16(e + 26);
        entry.arch = get32(e + 28);
        entry.payload = e + header;
        entry.container = container;
        if (flags & FLAG_ZSTD)
            entry.compression = MGPU_COMPRESSION_ZSTD;
        else if (flags & FLAG_LZ4)
            entry.compression = MGPU_COMPRESSION_LZ4;
        if (entry.compression != MGPU_COMPRESSION_NONE) {
            uint32_t compressed = get32(e + 16);
            uint64_t uncompressed = get64(e + 56);
            if (compressed > padded || uncompressed == 0 || uncompressed > MAX_CODE_SIZE ||
                uncompressed > (uint64_t)compressed * MAX_EXPANSION + 1024)
                return fail(err, errlen, "compressed entry sizes out of range", at + pos);
            if (entry.compression == MGPU_COMPRESSION_ZSTD) {
                unsigned long long stated = ZSTD_getFrameContentSize(e + header, compressed);
                if (stated != ZSTD_CONTENTSIZE_UNKNOWN && stated != uncompressed)
                    return fail(err, errlen, "zstd entry size disagrees with its frame", at + pos);
            }
            entry.payload_size = compressed;
            entry.code_size = (size_t)uncompressed;
        } else {
            entry.payload_size = (size_t)padded;
            entry.code_size = (size_t)padded;
        }
        /* Only PTX and cubins are of use; other kinds are skipped. */
        if ((kind == 1 || kind == 2 || kind == 0x10) && fn != NULL && fn(&entry, ctx) != 0)
            *stop = 1;
        count++;
        pos += header + (size_t)padded;
    }
    return count;
}

/* Whether the `avail` (< 4) bytes at p begin the container magic: the start
 * of a container cut short. */
static bool starts_magic(const unsigned char *p, size_t avail)
{
    for (size_t i = 0; i < avail; i++)
        if (p[i] != (unsigned char)(MGPU_FATBIN_MAGIC >> (8 * i)))
            return false;
    return true;
}

/* Why the container at `at` is not whole: cut short (the file ends before the
 * size its header claims) or a header that makes no sense. */
static int container_fail(const unsigned char *c, size_t avail, size_t container, size_t at,
                          char *err, size_t errlen)
{
    if (avail < CONTAINER_HEADER) {
        snprintf(err, errlen,
                 "truncated fatbin: container %zu at byte %zu has %zu of its %d header bytes",
                 container, at, avail, CONTAINER_HEADER);
        return -1;
    }
    uint16_t header = get16(c + 6);
    uint64_t body = get64(c + 8);
    if (header < CONTAINER_HEADER)
        return fail(err, errlen, "container header size out of range", at);
    snprintf(err, errlen,
             "truncated fatbin: container %zu at byte %zu claims %llu bytes, the data has %zu "
             "from there",
             container, at, (unsigned long long)header + body, avail);
    return -1;
}

long mgpu_fatbin_walk(const void *data, size_t size,
                      int (*fn)(const struct mgpu_fatbin_entry *entry, void *ctx), void *ctx,
                      char *err, size_t errlen)
{
    const unsigned char *base = data;
    size_t at = 0, container = 0;
    long total = 0;
    int stop = 0;
    while (at < size && !stop) {
        size_t avail = size - at;
        if (avail < 4 || get32(base + at) != MGPU_FATBIN_MAGIC) {
            /* Containers are 8-byte aligned: zero padding may follow one. */
            if (container > 0 && base[at] == 0) {
                at++;
                continue;
            }
            if (avail < 4 && starts_magic(base + at, avail))
                return container_fail(base + at, avail, container, at, err, errlen);
            return fail(err, errlen,
                        container ? "bytes after the last container" : "no fatbin magic", at);
        }
        size_t length = mgpu_fatbin_container_size(base + at, avail);
        if (length == 0)
            return container_fail(base + at, avail, container, at, err, errlen);
        long n = walk_container(base, at, container, fn, ctx, &stop, err, errlen);
        if (n < 0)
            return -1;
        total += n;
        at += length;
        container++;
    }
    return total;
}

const char *mgpu_compression_name(enum mgpu_compression c)
{
    switch (c) {
    case MGPU_COMPRESSION_ZSTD:
        return "zstd";
    case MGPU_COMPRESSION_LZ4:
        return "lz4";
    default:
        return "uncompressed";
    }
}

/* The number of bytes an LZ4 block decodes to, found by walking its
 * sequences (token, literal run, 2-byte offset, match run) without writing
 * them, so that the size an entry's header claims is checked against its
 * data before any memory is taken for it. 0 when the block is malformed. */
static size_t lz4_block_output_size(const unsigned char *p, size_t n)
{
    size_t at = 0, out = 0;
    while (at < n) {
        unsigned token = p[at++];
        size_t literals = token >> 4;
        if (literals == 15) {
            unsigned char more;
            do {
                if (at == n)
                    return 0;
                more = p[at++];
                literals += more;
            } while (more == 255);
        }
        if (literals > n - at)
            return 0;
        at += literals;
        out += literals;
        if (at == n) /* the last sequence is literals alone */
            return out;
        if (n - at < 2)
            return 0;
        size_t offset = (size_t)p[at] | (size_t)p[at + 1] << 8;
        at += 2;
        if (offset == 0 || offset > out)
            return 0;
        size_t match = (token & 15u) + 4;
        if ((token & 15u) == 15) {
            unsigned char more;
            do {
                if (at == n)
                    return 0;
                more = p[at++];
                match += more;
            } while (more == 255);
        }
        out += match;
        if (out > MAX_CODE_SIZE)
            return 0;
    }
    return 0; /* a block never ends on a match */
}

static int decode_lz4(const struct mgpu_fatbin_entry *entry, char *out, char *err, size_t errlen)
{
    int r = LZ4_decompress_safe((const char *)entry->payload, out, (int)entry->payload_size,
                                (int)entry->code_size);
    if (r < 0 || (size_t)r != entry->code_size) {
        snprintf(err, errlen, "corrupt fatbin: LZ4 entry does not decompress");
        return -1;
    }
    return 0;
}

/* Decompresses a zstd entry into a buffer that grows with what the data
 * actually yields, up to the size the header claims: a header (or frame)
 * that lies about a huge size costs no more memory than the data makes. */
static char *decode_zstd(const struct mgpu_fatbin_entry *entry, char *err, size_t errlen)
{
    size_t claim = entry->code_size;
    size_t capacity = entry->payload_size < ((size_t)1 << 16) ? ((size_t)1 << 20)
                                                               : entry->payload_size * 16;
    if (capacity > claim)
        capacity = claim;
    for (;;) {
        char *out = malloc(capacity + 1);
        if (out == NULL) {
            snprintf(err, errlen, "out of memory for a %zu-byte code object", capacity);
            return NULL;
        }
        size_t r = ZSTD_decompress(out, capacity, entry->payload, entry->payload_size);
        if (!ZSTD_isError(r) && r == claim)
            return out;
        free(out);
        if (ZSTD_isError(r) && ZSTD_getErrorCode(r) == ZSTD_error_dstSize_tooSmall &&
            capacity < claim) {
            capacity = capacity > claim / 2 ? claim : capacity * 2;
            continue;
        }
        if (ZSTD_isError(r))
            snprintf(err, errlen, "corrupt fatbin: zstd entry does not decompress (%s)",
                     ZSTD_getErrorName(r));
        else
            snprintf(err, errlen,
                     "corrupt fatbin: zstd entry claims %zu bytes, its data makes %zu", claim, r);
        return NULL;
    }
}

int mgpu_fatbin_entry_code(const struct mgpu_fatbin_entry *entry, char **code, size_t *size,
                           char *err, size_t errlen)
{
    size_t n = entry->code_size;
    if (entry->compression == MGPU_COMPRESSION_LZ4) {
        if (entry->payload_size > (size_t)LZ4_MAX_INPUT_SIZE || n > (size_t)INT32_MAX) {
            snprintf(err, errlen, "corrupt fatbin: LZ4 entry too large");
            return -1;
        }
        size_t decodes_to = lz4_block_output_size(entry->payload, entry->payload_size);
        if (decodes_to == 0) {
            snprintf(err, errlen, "corrupt fatbin: LZ4 entry does not decompress (malformed)");
            return -1;
        }
        if (decodes_to != n) {
            snprintf(err, errlen, "corrupt fatbin: LZ4 entry claims %zu bytes, its data makes %zu",
                     n, decodes_to);
            return -1;
        }
    }
    char *out;
    if (entry->compression == MGPU_COMPRESSION_ZSTD) {
        if ((out = decode_zstd(entry, err, errlen)) == NULL)
            return -1;
    } else {
        out = malloc(n + 1);
        if (out == NULL) {
            snprintf(err, errlen, "out of memory for a %zu-byte code object", n);
            return -1;
        }
        if (entry->compression == MGPU_COMPRESSION_LZ4) {
            if (decode_lz4(entry, out, err, errlen) != 0) {
                free(out);
                return -1;
            }
        } else if (n > 0) {
            memcpy(out, entry->payload, n);
        }
    }
    out[n] = '\0';
    /* Stored PTX is padded with NULs; its text ends at the first. */
    if (entry->kind == MGPU_CODE_PTX)
        n = strnlen(out, n);
    *code = out;
    *size = n;
    return 0;
}
