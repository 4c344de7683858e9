/* Unit tests of the fatbin reader and the image reader on fatbins built here:
 * plain, zstd and LZ4 entries, several containers, the choice of PTX for a
 * GPU, and every truncation and 20000 corruptions of a valid fatbin
 * (which must give an error or a result, never a read outside the bytes:
 * run under AddressSanitizer in CI). Also the PTX text scanner. */
#include "check.h"
#include "ptx/fatbin.h"
#include "ptx/image.h"
#include "ptx/ptx_text.h"

#include <lz4.h>
#include <stdint.h>
#include <stdlib.h>
#include <zstd.h>

/* Under AddressSanitizer, an allocation above 64 MiB fails instead of
 * succeeding untouched, so that a reader that believes a header's absurd
 * size shows as "out of memory" rather than passing unnoticed. */
const char *__asan_default_options(void);
const char *__asan_default_options(void)
{
    return "max_allocation_size_mb=64:allocator_may_return_null=1";
}

static const char ptx80[] = "//\n// test\n.version 8.0\n.target sm_80\n.address_size 64\n"
                            ".visible .entry k80(.param .u64 p)\n{\n ret;\n}\n";
static const char ptx90[] = ".version 9.0\n.target sm_90\n.address_size 64\n"
                            "// .entry not_a_kernel(\n/* .entry nor_this( */\n"
                            ".visible .entry first(.param .u64 p)\n{\n ret;\n}\n"
                            ".weak .entry second()\n{\n ret;\n}\n";

struct buffer {
    unsigned char data[1 << 16];
    size_t len;
};

static void put(struct buffer *b, uint64_t value, int bytes)
{
    for (int i = 0; i < bytes; i++)
        b->data[b->len++] = (unsigned char)(value >> (8 * i));
}

static size_t begin_container(struct buffer *b)
{
    size_t at = b->len;
    put(b, MGPU_FATBIN_MAGIC, 4);
    put(b, 1, 2);
    put(b, 16, 2);
    put(b, 0, 8); /* body size, set by end_container */
    return at;
}

static void end_container(struct buffer *b, size_t at)
{
    uint64_t body = b->len - at - 16;
    for (int i = 0; i < 8; i++)
        b->data[at + 8 + i] = (unsigned char)(body >> (8 * i));
}

/* An entry whose payload is `stored` (compressed or not); `flags` says how. */
static void add_entry(struct buffer *b, int kind, unsigned arch, uint64_t flags,
                      const void *stored, size_t stored_len, size_t code_len)
{
    size_t padded = (stored_len + 7) & ~(size_t)7;
    put(b, (uint64_t)kind, 2);
    put(b, 0x101, 2);
    put(b, 64, 4);
    put(b, padded, 8);
    put(b, flags ? stored_len : 0, 4);
    put(b, 0, 4);
    put(b, 0, 2); /* minor */
    put(b, 9, 2); /* major */
    put(b, arch, 4);
    put(b, 0, 8); /* name */
    put(b, flags | 0x11, 8);
    put(b, 0, 8);
    put(b, flags ? code_len : 0, 8);
    memcpy(b->data + b->len, stored, stored_len);
    memset(b->data + b->len + stored_len, 0, padded - stored_len);
    b->len += padded;
}

static void build(struct buffer *b)
{
    b->len = 0;
    size_t c1 = begin_container(b);
    add_entry(b, 1, 80, 0, ptx80, sizeof ptx80, sizeof ptx80);
    unsigned char zbuf[4096];
    size_t zlen = ZSTD_compress(zbuf, sizeof zbuf, ptx90, sizeof ptx90, 3);
    add_entry(b, 1, 90, 0x8000, zbuf, zlen, sizeof ptx90);
    end_container(b, c1);
    put(b, 0, 8); /* padding between containers */
    size_t c2 = begin_container(b);
    char lbuf[4096];
    int llen = LZ4_compress_default(ptx90, lbuf, (int)sizeof ptx90, (int)sizeof lbuf);
    add_entry(b, 1, 90, 0x2000, lbuf, (size_t)llen, sizeof ptx90);
    /* A cubin without sections: an ELF header alone (e_shoff 0). */
    static const unsigned char fake_elf[64] = {0x7f, 'E', 'L', 'F', 2, 1, 1};
    add_entry(b, 2, 90, 0, fake_elf, sizeof fake_elf, sizeof fake_elf);
    end_container(b, c2);
}

static int count_entries(const struct mgpu_fatbin_entry *e, void *ctx)
{
    (void)e;
    (*(int *)ctx)++;
    return 0;
}

static void count_kernel(const char *name, void *ctx)
{
    char *names = ctx;
    strcat(names, name);
    strcat(names, " ");
}

/* Reads `len` bytes copied into a block of exactly that size, so that any
 * read past them is caught. */
static int read_exact(const unsigned char *data, size_t len)
{
    unsigned char *copy = malloc(len ? len : 1);
    memcpy(copy, data, len);
    struct mgpu_image image;
    char err[256];
    int rc = mgpu_image_read(copy, len, &image, err, sizeof err);
    if (rc == 0) {
        for (size_t i = 0; i < image.count; i++)
            if (image.objects[i].code[image.objects[i].size] != '\0')
                check_failures++;
        mgpu_image_free(&image);
    } else if (strchr(err, '\n') != NULL || err[0] == '\0') {
        check_failures++;
    }
    free(copy);
    return rc;
}

/* One container around one entry, in a heap buffer of its exact size. */
static unsigned char *single_entry_fatbin(int kind, uint64_t flags, const void *stored,
                                          size_t stored_len, size_t claimed, size_t *len)
{
    size_t padded = (stored_len + 7) & ~(size_t)7;
    *len = 16 + 64 + padded;
    unsigned char *f = calloc(1, *len);
    uint64_t fields[][3] = {
        {0, MGPU_FATBIN_MAGIC, 4}, {4, 1, 2}, {6, 16, 2}, {8, 64 + padded, 8},
        {16, (uint64_t)kind, 2}, {20, 64, 4}, {24, padded, 8}, {32, stored_len, 4},
        {44, 90, 4}, {56, flags | 0x11, 8}, {72, claimed, 8},
    };
    for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++)
        for (uint64_t b = 0; b < fields[i][2]; b++)
            f[fields[i][0] + b] = (unsigned char)(fields[i][1] >> (8 * b));
    memcpy(f + 80, stored, stored_len);
    return f;
}

/* Compressed entries whose headers claim far more than their data makes:
 * refused with the two sizes, without an allocation of the claimed size. */
static void check_absurd_claims(void)
{
    size_t n = (size_t)1 << 20;
    unsigned char *random_bytes = malloc(n);
    uint64_t seed = 42;
    for (size_t i = 0; i < n; i++) {
        seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
        random_bytes[i] = (unsigned char)(seed >> 56);
    }
    char err[256];
    struct mgpu_image image;
    size_t len;

    /* zstd: frame and entry header both claim 200 MiB for 1 MiB of data. */
    size_t zcap = ZSTD_compressBound(n);
    unsigned char *z = malloc(zcap);
    size_t zlen = ZSTD_compress(z, zcap, random_bytes, n, 1);
    CHECK(!ZSTD_isError(zlen) && ZSTD_getFrameContentSize(z, zlen) == n);
    size_t claim = (size_t)200 << 20;
    CHECK((z[4] >> 6) == 2); /* a 4-byte frame content size after the 5-byte frame start */
    for (int b = 0; b < 4; b++)
        z[5 + (z[4] & 0x20 ? 0 : 1) + b] = (unsigned char)(claim >> (8 * b));
    CHECK(ZSTD_getFrameContentSize(z, zlen) == claim);
    unsigned char *f = single_entry_fatbin(2, 0x8000, z, zlen, claim, &len);
    CHECK(mgpu_image_read(f, len, &image, err, sizeof err) == -1);
    CHECK_CONTAINS(err, "zstd entry does not decompress");
    free(f);
    free(z);

    /* LZ4: 1 MiB of literals claiming 200 MiB. */
    int lcap = LZ4_compressBound((int)n);
    char *l = malloc((size_t)lcap);
    int llen = LZ4_compress_default((const char *)random_bytes, l, (int)n, lcap);
    f = single_entry_fatbin(2, 0x2000, l, (size_t)llen, claim, &len);
    CHECK(mgpu_image_read(f, len, &image, err, sizeof err) == -1);
    CHECK_CONTAINS(err, "LZ4 entry claims 209715200 bytes, its data makes 1048576");
    free(f);
    /* ... and the same data claimed truthfully is read. */
    f = single_entry_fatbin(1, 0x2000, l, (size_t)llen, n, &len);
    CHECK(mgpu_image_read(f, len, &image, err, sizeof err) == 0);
    CHECK(image.count == 1 && image.objects[0].compression == MGPU_COMPRESSION_LZ4);
    mgpu_image_free(&image);
    free(f);
    free(l);
    free(random_bytes);
}

int main(void)
{
    static struct buffer b;
    build(&b);
    char err[256];

    int entries = 0;
    CHECK(mgpu_fatbin_walk(b.data, b.len, count_entries, &entries, err, sizeof err) == 4);
    CHECK(entries == 4);

    struct mgpu_image image;
    CHECK(mgpu_image_read(b.data, b.len, &image, err, sizeof err) == 0);
    CHECK(image.kind == MGPU_IMAGE_FATBIN && image.count == 4);
    CHECK(image.count == 4 && image.objects[0].compression == MGPU_COMPRESSION_NONE);
    CHECK(image.count == 4 && image.objects[1].compression == MGPU_COMPRESSION_ZSTD);
    CHECK(image.count == 4 && image.objects[2].compression == MGPU_COMPRESSION_LZ4);
    CHECK(image.count == 4 && image.objects[3].kind == MGPU_CODE_ELF);
    CHECK(image.count == 4 && image.objects[2].container == 1);
    CHECK_STR(image.count == 4 ? image.objects[0].code : NULL, ptx80);
    CHECK_STR(image.count == 4 ? image.objects[1].code : NULL, ptx90);
    CHECK_STR(image.count == 4 ? image.objects[2].code : NULL, ptx90);
    const struct mgpu_code_object *best = mgpu_image_best_ptx(&image, 90);
    CHECK(best != NULL && best->arch == 90);
    best = mgpu_image_best_ptx(&image, 86);
    CHECK(best != NULL && best->arch == 80);
    CHECK(mgpu_image_best_ptx(&image, 75) == NULL);
    mgpu_image_free(&image);

    char names[256] = "";
    CHECK(mgpu_ptx_kernels(ptx90, sizeof ptx90 - 1, count_kernel, names) == 2);
    CHECK_STR(names, "first second ");
    CHECK(mgpu_ptx_target_arch(ptx90, sizeof ptx90 - 1) == 90);
    CHECK(mgpu_ptx_is_text(ptx80, sizeof ptx80 - 1));
    CHECK(!mgpu_ptx_is_text("hello", 5));
    CHECK(mgpu_image_read(ptx80, sizeof ptx80 - 1, &image, err, sizeof err) == 0);
    CHECK(image.kind == MGPU_IMAGE_PTX && image.count == 1 && image.objects[0].arch == 80);
    mgpu_image_free(&image);
    CHECK(mgpu_image_read("not code", 8, &image, err, sizeof err) == -1);
    CHECK_CONTAINS(err, "not GPU code");

    /* A cubin entry that is not ELF (its magic overwritten) is corrupt. */
    static struct buffer not_elf;
    not_elf = b;
    size_t elf_at = b.len - 64; /* the last entry's payload: fake_elf */
    CHECK(memcmp(not_elf.data + elf_at, "\177ELF", 4) == 0);
    not_elf.data[elf_at + 1] = 'X';
    if (mgpu_image_read(not_elf.data, not_elf.len, &image, err, sizeof err) == 0) {
        CHECK(!"a cubin entry without an ELF header was read");
        mgpu_image_free(&image);
    } else {
        CHECK_CONTAINS(err, "corrupt cubin");
    }

    /* Every truncation: an error or fewer objects, never a bad read; a
     * fatbin cut short is called truncated, not "not GPU code". */
    for (size_t cut = 0; cut < b.len; cut++) {
        if (read_exact(b.data, cut) == 0 || cut < 4)
            continue;
        unsigned char *copy = malloc(cut);
        memcpy(copy, b.data, cut);
        CHECK(mgpu_image_read(copy, cut, &image, err, sizeof err) == -1);
        if (strstr(err, "truncated fatbin") == NULL) {
            fprintf(stderr, "cut at %zu: %s\n", cut, err);
            check_failures++;
        }
        free(copy);
    }
    check_absurd_claims();
    CHECK(read_exact(b.data, b.len) == 0);

    /* Corruptions of one to four bytes anywhere, from a fixed seed. */
    uint64_t seed = 0x9e3779b97f4a7c15ULL;
    static unsigned char mutated[sizeof b.data];
    int failures_seen = 0;
    for (int round = 0; round < 20000; round++) {
        memcpy(mutated, b.data, b.len);
        int flips = 1 + round % 4;
        for (int f = 0; f < flips; f++) {
            seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
            size_t at = (size_t)(seed >> 33) % b.len;
            mutated[at] = (unsigned char)(seed >> 13);
        }
        if (read_exact(mutated, b.len) != 0)
            failures_seen++;
    }
    CHECK(failures_seen > 0);
    CHECK_DONE();
}
