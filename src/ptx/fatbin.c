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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

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

long mgpu_fatbin_walk(const void *data, size_t size,
                      int (*fn)(const struct mgpu_fatbin_entry *entry, void *ctx), void *ctx,
                      char *err, size_t errlen)
{
    const unsigned char *base = data;
    size_t at = 0, container = 0;
    long total = 0;
    int stop = 0;
    while (at < size && !stop) {
        if (size - at < CONTAINER_HEADER || get32(base + at) != MGPU_FATBIN_MAGIC) {
            /* Containers are 8-byte aligned: zero padding may follow one. */
            if (container > 0 && base[at] == 0) {
                at++;
                continue;
            }
            return fail(err, errlen,
                        container ? "bytes after the last container" : "no fatbin magic", at);
        }
        size_t length = mgpu_fatbin_container_size(base + at, size - at);
        if (length == 0)
            return fail(err, errlen, "container size runs past the data", at);
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

int mgpu_fatbin_entry_code(const struct mgpu_fatbin_entry *entry, char **code, size_t *size,
                           char *err, size_t errlen)
{
    char *out = malloc(entry->code_size + 1);
    if (out == NULL) {
        snprintf(err, errlen, "out of memory for a %zu-byte code object", entry->code_size);
        return -1;
    }
    size_t n = entry->code_size;
    switch (entry->compression) {
    case MGPU_COMPRESSION_NONE:
        memcpy(out, entry->payload, n);
        break;
    case MGPU_COMPRESSION_ZSTD: {
        size_t r = ZSTD_decompress(out, entry->code_size, entry->payload, entry->payload_size);
        if (ZSTD_isError(r) || r != entry->code_size) {
            snprintf(err, errlen, "corrupt fatbin: zstd entry does not decompress (%s)",
                     ZSTD_isError(r) ? ZSTD_getErrorName(r) : "wrong size");
            free(out);
            return -1;
        }
        break;
    }
    case MGPU_COMPRESSION_LZ4: {
        if (entry->payload_size > (size_t)LZ4_MAX_INPUT_SIZE ||
            entry->code_size > (size_t)INT32_MAX) {
            snprintf(err, errlen, "corrupt fatbin: LZ4 entry too large");
            free(out);
            return -1;
        }
        int r = LZ4_decompress_safe((const char *)entry->payload, out, (int)entry->payload_size,
                                    (int)entry->code_size);
        if (r < 0 || (size_t)r != entry->code_size) {
            snprintf(err, errlen, "corrupt fatbin: LZ4 entry does not decompress");
            free(out);
            return -1;
        }
        break;
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
