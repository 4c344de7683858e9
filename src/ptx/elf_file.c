/* Owns the reading of ELF headers, section tables and symbol tables, for host
 * binaries and cubins alike. */
#include "ptx/elf_file.h"

#include <elf.h>
#include <string.h>

#define STO_CUDA_ENTRY 0x10 /* st_other bit nvcc sets on kernels */

bool mgpu_elf_identify(const void *data, size_t size, unsigned *machine)
{
    const Elf64_Ehdr *h = data;
    if (size < sizeof *h || memcmp(h->e_ident, ELFMAG, SELFMAG) != 0 ||
        h->e_ident[EI_CLASS] != ELFCLASS64 || h->e_ident[EI_DATA] != ELFDATA2LSB)
        return false;
    if (machine)
        *machine = h->e_machine;
    return true;
}

/* The section table, checked; NULL when it does not fit in the file. */
static const Elf64_Shdr *sections(const void *data, size_t size, size_t *count)
{
    const Elf64_Ehdr *h = data;
    if (!mgpu_elf_identify(data, size, NULL) || h->e_shentsize != sizeof(Elf64_Shdr) ||
        h->e_shoff > size || h->e_shnum > (size - h->e_shoff) / sizeof(Elf64_Shdr) ||
        h->e_shstrndx >= h->e_shnum)
        return NULL;
    *count = h->e_shnum;
    return (const Elf64_Shdr *)((const char *)data + h->e_shoff);
}

static bool section_in_file(const Elf64_Shdr *s, size_t size)
{
    return s->sh_type == SHT_NOBITS || (s->sh_offset <= size && s->sh_size <= size - s->sh_offset);
}

/* A NUL-terminated string at `offset` of string section `strtab`, or NULL. */
static const char *string_at(const void *data, size_t size, const Elf64_Shdr *strtab, size_t offset)
{
    if (!section_in_file(strtab, size) || strtab->sh_type == SHT_NOBITS ||
        offset >= strtab->sh_size)
        return NULL;
    const char *s = (const char *)data + strtab->sh_offset + offset;
    if (memchr(s, '\0', strtab->sh_size - offset) == NULL)
        return NULL;
    return s;
}

const void *mgpu_elf_section(const void *data, size_t size, const char *name, size_t *section_size)
{
    size_t count;
    const Elf64_Shdr *sh = sections(data, size, &count);
    if (sh == NULL)
        return NULL;
    const Elf64_Shdr *names = &sh[((const Elf64_Ehdr *)data)->e_shstrndx];
    for (size_t i = 0; i < count; i++) {
        const char *n = string_at(data, size, names, sh[i].sh_name);
        if (n == NULL || strcmp(n, name) != 0 || sh[i].sh_type == SHT_NOBITS ||
            !section_in_file(&sh[i], size))
            continue;
        *section_size = sh[i].sh_size;
        return (const char *)data + sh[i].sh_offset;
    }
    return NULL;
}

long mgpu_cubin_kernels(const void *data, size_t size, void (*fn)(const char *name, void *ctx),
                        void *ctx)
{
    size_t count;
    const Elf64_Shdr *sh = sections(data, size, &count);
    if (sh == NULL)
        return -1;
    long kernels = 0;
    for (size_t i = 0; i < count; i++) {
        if (sh[i].sh_type != SHT_SYMTAB)
            continue;
        if (!section_in_file(&sh[i], size) || sh[i].sh_entsize != sizeof(Elf64_Sym) ||
            sh[i].sh_link >= count)
            return -1;
        const Elf64_Sym *syms = (const Elf64_Sym *)((const char *)data + sh[i].sh_offset);
        size_t nsyms = sh[i].sh_size / sizeof(Elf64_Sym);
        for (size_t k = 0; k < nsyms; k++) {
            if (ELF64_ST_TYPE(syms[k].st_info) != STT_FUNC ||
                (ELF64_ST_BIND(syms[k].st_info) != STB_GLOBAL &&
                 ELF64_ST_BIND(syms[k].st_info) != STB_WEAK) || /* templates are weak */
                !(syms[k].st_other & STO_CUDA_ENTRY))
                continue;
            const char *name = string_at(data, size, &sh[sh[i].sh_link], syms[k].st_name);
            if (name == NULL)
                return -1;
            if (fn)
                fn(name, ctx);
            kernels++;
        }
    }
    return kernels;
}
