/* Reading NVIDIA fat binaries: the containers nvcc embeds in host programs
 * (section .nv_fatbin, and __nv_relfatbin with -rdc), their entries (PTX or
 * ELF cubins, one per architecture) and the entries' compressed payloads.
 * Every length is checked against the bytes given: a corrupt or truncated
 * fatbin gives an error, never a read outside them. */
#ifndef MGPU_PTX_FATBIN_H
#define MGPU_PTX_FATBIN_H

#include <stddef.h>
#include <stdint.h>

#define MGPU_FATBIN_MAGIC 0xBA55ED50u
#define MGPU_FATBIN_WRAPPER_MAGIC 0x466243B1u

enum mgpu_code_kind { MGPU_CODE_PTX = 1, MGPU_CODE_ELF = 2 };
#define MGPU_FATBIN_KIND_CUBIN 2 /* stored_kind of an ELF cubin entry */
enum mgpu_compression { MGPU_COMPRESSION_NONE, MGPU_COMPRESSION_ZSTD, MGPU_COMPRESSION_LZ4 };

struct mgpu_fatbin_entry {
    enum mgpu_code_kind kind;
    unsigned stored_kind;   /* the header's kind word: 1 PTX, 2 ELF cubin, others kept as ELF */
    unsigned arch;          /* 90 for sm_90 / compute_90 */
    unsigned version_major; /* PTX ISA version for PTX, ELF ABI version for cubins */
    unsigned version_minor;
    enum mgpu_compression compression;
    const unsigned char *payload; /* as stored */
    size_t payload_size;
    size_t code_size; /* once decompressed */
    size_t container; /* which container of the walk, from 0 */
};

/* The size of the container starting at `data` (header included), or 0 when
 * `avail` bytes do not hold a whole one. */
size_t mgpu_fatbin_container_size(const void *data, size_t avail);

/* Calls fn for every PTX and cubin entry of the containers that follow each other in
 * [data, data + size) (padding between containers is skipped). Stops early
 * when fn returns nonzero. Returns the number of entries (other kinds
 * included), or -1 with a one-line message in err when the bytes are not a
 * valid fatbin. */
long mgpu_fatbin_walk(const void *data, size_t size,
                      int (*fn)(const struct mgpu_fatbin_entry *entry, void *ctx), void *ctx,
                      char *err, size_t errlen);

/* The entry's code, decompressed, in a new buffer with a NUL after it (PTX is
 * text). Returns 0, or -1 with a message in err. */
int mgpu_fatbin_entry_code(const struct mgpu_fatbin_entry *entry, char **code, size_t *size,
                           char *err, size_t errlen);

const char *mgpu_compression_name(enum mgpu_compression c);

#endif
