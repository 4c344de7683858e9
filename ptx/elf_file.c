/* Owns the reading of ELF headers, section tables and symbol tables, for host
 * binaries and cubins alike. The bytes may sit at any address (a cubin
 * inside a fatbin, a file a fuzzer hands over), so every header, section
 * and symbol is copied into a local with memcpy before a field is read. */
#include "ptx/elf_file.h"

#include <elf.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define STO_CUDA_ENTRY 0x10 /* st_other bit nvcc sets on kernels */

static bool read_header(const void *data, size_t size, Elf64_Ehdr *h)
{
    if (data == NULL || size < sizeof *h)
        return false;
    memcpy(h, data, sizeof *h);
    return memcmp(h->e_ident, ELFMAG, SELFMAG) == 0 && h->e_ident[EI_CLASS] == ELFCLASS64 &&
           h->e_ident[EI_DATA] == ELFDATA2LSB;
}

bool mgpu_elf_identify(const void *data, size_t size, unsigned *machine)
{
    Elf64_Ehdr h;
    if (!read_header(data, size, &h))
        return false;
    if (machine)
        *machine = h.e_machine;
    return true;
}

/* The section table of a file whose header was read, checked to lie in the
 * file. */
struct section_table {
    const unsigned char *file;
    size_t size;
    uint64_t offset;
    size_t count;
    size_t names; /* index of the section-name string table */
};

static Elf64_Shdr section_at(const struct section_table *t, size_t i)
{
    Elf64_Shdr s;
    memcpy(&s, t->file + t->offset + i * sizeof s, sizeof s);
    return s;
}

static bool section_in_file(const Elf64_Shdr *s, size_t size)
{
    return s->sh_type == SHT_NOBITS || (s->sh_offset <= size && s->sh_size <= size - s->sh_offset);
}

__attribute__((format(printf, 3, 4))) static int elf_fail(char *err, size_t errlen,
                                                          const char *fmt, ...)
{
    if (err != NULL && errlen > 0) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return -1;
}

/* Fills *t from the header; -1 with a one-line reason when the section table
 * or any section's contents lie outside the file. A file without sections
 * (e_shoff 0) has an empty table. */
static int read_sections(const void *data, size_t size, struct section_table *t, char *err,
                         size_t errlen)
{
    Elf64_Ehdr h;
    if (!read_header(data, size, &h))
        return elf_fail(err, errlen, "not a 64-bit little-endian ELF file");
    t->file = data;
    t->size = size;
    t->offset = h.e_shoff;
    t->count = 0;
    t->names = 0;
    if (h.e_shoff == 0)
        return 0;
    if (h.e_shentsize != sizeof(Elf64_Shdr))
        return elf_fail(err, errlen, "section headers of %u bytes, not %zu", (unsigned)h.e_shentsize,
                        sizeof(Elf64_Shdr));
    if (h.e_shoff > size || size - h.e_shoff < sizeof(Elf64_Shdr))
        return elf_fail(err, errlen,
                        "truncated: the section table starts at byte %llu, the file has %zu",
                        (unsigned long long)h.e_shoff, size);
    /* With 0xff00 sections or more, section 0 holds the count and the
     * name table's index (extended numbering). */
    Elf64_Shdr first = section_at(t, 0);
    uint64_t count = h.e_shnum != 0 ? h.e_shnum : first.sh_size;
    uint64_t names = h.e_shstrndx != SHN_XINDEX ? h.e_shstrndx : first.sh_link;
    if (count > (size - h.e_shoff) / sizeof(Elf64_Shdr))
        return elf_fail(err, errlen,
                        "truncated: %llu section headers do not fit in the file's %zu bytes",
                        (unsigned long long)count, size);
    if (names >= count)
        return elf_fail(err, errlen, "the section-name table is section %llu of %llu",
                        (unsigned long long)names, (unsigned long long)count);
    t->count = (size_t)count;
    t->names = (size_t)names;
    for (size_t i = 0; i < t->count; i++) {
        Elf64_Shdr s = section_at(t, i);
        if (!section_in_file(&s, size))
            return elf_fail(err, errlen,
                            "truncated: section %zu runs past the end of the file (%zu bytes)", i,
                            size);
    }
    return 0;
}

/* The program-header table and every segment's file contents must lie in the
 * file too: a file cut inside them has all its sections and still lacks
 * bytes the loader needs. */
static int check_segments(const void *data, size_t size, char *err, size_t errlen)
{
    Elf64_Ehdr h;
    if (!read_header(data, size, &h))
        return elf_fail(err, errlen, "not a 64-bit little-endian ELF file");
    if (h.e_phnum == 0)
        return 0;
    if (h.e_phentsize != sizeof(Elf64_Phdr))
        return elf_fail(err, errlen, "program headers of %u bytes, not %zu",
                        (unsigned)h.e_phentsize, sizeof(Elf64_Phdr));
    if (h.e_phoff > size || h.e_phnum > (size - h.e_phoff) / sizeof(Elf64_Phdr))
        return elf_fail(err, errlen,
                        "truncated: %u program headers at byte %llu do not fit in the file's %zu "
                        "bytes",
                        (unsigned)h.e_phnum, (unsigned long long)h.e_phoff, size);
    for (size_t i = 0; i < h.e_phnum; i++) {
        Elf64_Phdr ph;
        memcpy(&ph, (const unsigned char *)data + h.e_phoff + i * sizeof ph, sizeof ph);
        if (ph.p_offset > size || ph.p_filesz > size - ph.p_offset)
            return elf_fail(err, errlen,
                            "truncated: segment %zu runs past the end of the file (%zu bytes)", i,
                            size);
    }
    return 0;
}

int mgpu_elf_check(const void *data, size_t size, char *err, size_t errlen)
{
    struct section_table t;
    if (read_sections(data, size, &t, err, errlen) != 0)
        return -1;
    return check_segments(data, size, err, errlen);
}

/* A NUL-terminated string at `offset` of string section `strtab`, or NULL. */
static const char *string_at(const struct section_table *t, const Elf64_Shdr *strtab,
                             uint64_t offset)
{
    if (!section_in_file(strtab, t->size) || strtab->sh_type == SHT_NOBITS ||
        offset >= strtab->sh_size)
        return NULL;
    const char *s = (const char *)t->file + strtab->sh_offset + offset;
    if (memchr(s, '\0', strtab->sh_size - offset) == NULL)
        return NULL;
    return s;
}

const void *mgpu_elf_section(const void *data, size_t size, const char *name, size_t *section_size)
{
    struct section_table t;
    if (read_sections(data, size, &t, NULL, 0) != 0 || t.count == 0)
        return NULL;
    Elf64_Shdr names = section_at(&t, t.names);
    for (size_t i = 0; i < t.count; i++) {
        Elf64_Shdr s = section_at(&t, i);
        const char *n = string_at(&t, &names, s.sh_name);
        if (n == NULL || strcmp(n, name) != 0 || s.sh_type == SHT_NOBITS)
            continue;
        *section_size = s.sh_size;
        return (const char *)data + s.sh_offset;
    }
    return NULL;
}

long mgpu_cubin_kernels(const void *data, size_t size, void (*fn)(const char *name, void *ctx),
                        void *ctx)
{
    struct section_table t;
    if (read_sections(data, size, &t, NULL, 0) != 0)
        return -1;
    long kernels = 0;
    for (size_t i = 0; i < t.count; i++) {
        Elf64_Shdr symtab = section_at(&t, i);
        if (symtab.sh_type != SHT_SYMTAB)
            continue;
        if (symtab.sh_entsize != sizeof(Elf64_Sym) || symtab.sh_link >= t.count)
            return -1;
        Elf64_Shdr strtab = section_at(&t, symtab.sh_link);
        const unsigned char *syms = (const unsigned char *)data + symtab.sh_offset;
        size_t nsyms = symtab.sh_size / sizeof(Elf64_Sym);
        for (size_t k = 0; k < nsyms; k++) {
            Elf64_Sym sym;
            memcpy(&sym, syms + k * sizeof sym, sizeof sym);
            if (ELF64_ST_TYPE(sym.st_info) != STT_FUNC ||
                (ELF64_ST_BIND(sym.st_info) != STB_GLOBAL &&
                 ELF64_ST_BIND(sym.st_info) != STB_WEAK) || /* templates are weak */
                !(sym.st_other & STO_CUDA_ENTRY))
                continue;
            const char *name = string_at(&t, &strtab, sym.st_name);
            if (name == NULL)
                return -1;
            if (fn)
                fn(name, ctx);
            kernels++;
        }
    }
    return kernels;
}
