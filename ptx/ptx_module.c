/* Owns the memory of a parsed PTX module (an arena freed at once, with
 * statements the size of their kind, so that memory stays proportional to
 * the text with a small constant however tiny its statements) and the
 * small queries passes share: names, modifiers, state spaces, lookups. */
#include "ptx/ptx_module.h"

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct ptx_arena {
    struct ptx_arena *next;
    size_t used, size;
    max_align_t data[];
};

/* Chunks start small (most modules are) and double up to a limit. */
enum { ARENA_FIRST_CHUNK = 64 << 10, ARENA_CHUNK = 4 << 20 };

void *ptx_alloc_aligned(struct ptx_module *module, size_t size, size_t align)
{
    /* Rounding the size as well keeps the next small block aligned without
     * padding: statements are multiples of 8. */
    size = (size + align - 1) & ~(align - 1);
    struct ptx_arena *a = module->arena;
    size_t at = a ? (a->used + align - 1) & ~(align - 1) : 0;
    if (a == NULL || at > a->size || a->size - at < size) {
        size_t chunk = a == NULL                     ? ARENA_FIRST_CHUNK
                       : a->size < ARENA_FIRST_CHUNK ? ARENA_FIRST_CHUNK
                       : a->size < ARENA_CHUNK       ? a->size * 2
                                                     : ARENA_CHUNK;
        if (size > chunk / 4)
            chunk = size;
        struct ptx_arena *fresh = malloc(sizeof *fresh + chunk);
        if (fresh == NULL)
            return NULL;
        fresh->used = 0;
        fresh->size = chunk;
        if (a != NULL && chunk == size) {
            /* A large block gets its own chunk behind the current one, so the
             * current chunk's free space is not thrown away. */
            fresh->next = a->next;
            a->next = fresh;
        } else {
            fresh->next = a;
            module->arena = fresh;
        }
        a = fresh;
        at = 0;
    }
    void *p = (char *)a->data + at;
    a->used = at + size;
    return p;
}

void *ptx_alloc(struct ptx_module *module, size_t size)
{
    return ptx_alloc_aligned(module, size, sizeof(max_align_t));
}

/* An owned array is an arena chunk of its own, all of it used, so that
 * adopting it is linking it into the chain. */
static struct ptx_arena *owned_chunk(void *data)
{
    return (struct ptx_arena *)(void *)((char *)data - offsetof(struct ptx_arena, data));
}

void *ptx_owned_grow(void *data, size_t size)
{
    struct ptx_arena *a = realloc(data ? owned_chunk(data) : NULL, sizeof *a + size);
    if (a == NULL)
        return NULL;
    a->next = NULL;
    a->used = a->size = size;
    return a->data;
}

void ptx_owned_adopt(struct ptx_module *module, void *data)
{
    struct ptx_arena *a = owned_chunk(data), *head = module->arena;
    if (head == NULL) {
        a->next = NULL;
        module->arena = a;
    } else {
        a->next = head->next;
        head->next = a;
    }
}

void ptx_owned_free(void *data)
{
    if (data)
        free(owned_chunk(data));
}

size_t ptx_module_heap_bytes(const struct ptx_module *module)
{
    size_t n = 0;
    for (const struct ptx_arena *a = module->arena; a != NULL; a = a->next)
        n += sizeof *a + a->used;
    return n;
}

size_t ptx_stmt_size(enum ptx_stmt_kind kind)
{
    size_t member = 0;
    switch (kind) {
    case PTX_VERBATIM:
    case PTX_DIRECTIVE:
    case PTX_LABEL:
        member = sizeof(struct ptx_str);
        break;
    case PTX_VARIABLE:
        member = sizeof(struct ptx_variable);
        break;
    case PTX_FUNCTION:
        member = sizeof(struct ptx_function);
        break;
    case PTX_INSTRUCTION:
        member = sizeof(struct ptx_instruction);
        break;
    case PTX_BLOCK_OPEN:
    case PTX_BLOCK_CLOSE:
        break;
    }
    return offsetof(struct ptx_stmt, u) + member;
}

struct ptx_stmt *ptx_new_stmt(struct ptx_module *module, enum ptx_stmt_kind kind)
{
    size_t size = ptx_stmt_size(kind);
    struct ptx_stmt *s = ptx_alloc_aligned(module, size, _Alignof(struct ptx_stmt));
    if (s != NULL) {
        memset(s, 0, size);
        s->kind = kind;
    }
    return s;
}

struct ptx_stmt *ptx_copy_stmt(struct ptx_module *module, const struct ptx_stmt *s)
{
    size_t size = ptx_stmt_size(s->kind);
    struct ptx_stmt *copy = ptx_alloc_aligned(module, size, _Alignof(struct ptx_stmt));
    if (copy != NULL)
        memcpy(copy, s, size);
    return copy;
}

char *ptx_format(struct ptx_module *module, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0)
        return NULL;
    char *s = ptx_alloc(module, (size_t)n + 1);
    if (s == NULL)
        return NULL;
    va_start(ap, fmt);
    vsnprintf(s, (size_t)n + 1, fmt, ap);
    va_end(ap);
    return s;
}

void ptx_module_free(struct ptx_module *module)
{
    struct ptx_arena *a = module->arena;
    while (a != NULL) {
        struct ptx_arena *next = a->next;
        free(a);
        a = next;
    }
    memset(module, 0, sizeof *module);
}

bool ptx_str_equal(struct ptx_str a, struct ptx_str b)
{
    return a.n == b.n && memcmp(a.p, b.p, a.n) == 0;
}

bool ptx_str_in(struct ptx_str s, const char *const *words)
{
    for (; *words; words++)
        if (ptx_str_is(s, *words))
            return true;
    return false;
}

bool ptx_instruction_has_mod(const struct ptx_instruction *ins, const char *mod)
{
    for (uint32_t i = 0; i < ins->nmods; i++)
        if (ptx_str_is(ins->mods[i], mod))
            return true;
    return false;
}

bool ptx_str_starts_with(struct ptx_str s, const char *prefix)
{
    size_t n = strlen(prefix);
    return s.n >= n && memcmp(s.p, prefix, n) == 0;
}

char *ptx_str_dup(struct ptx_str s)
{
    char *d = malloc(s.n + 1);
    if (d) {
        if (s.n)
            memcpy(d, s.p, s.n);
        d[s.n] = '\0';
    }
    return d;
}

const char *ptx_quote(char *buf, size_t size, struct ptx_str s)
{
    size_t len = 0, shown = 0;
    if (size == 0)
        return buf;
    buf[0] = '\0';
    for (size_t i = 0; i < s.n; i++) {
        unsigned char c = (unsigned char)s.p[i];
        char one[8];
        if (c == '\n')
            snprintf(one, sizeof one, "\\n");
        else if (c == '\t')
            snprintf(one, sizeof one, "\\t");
        else if (c < ' ' || c > '~' || c == '\\' || c == '\'')
            snprintf(one, sizeof one, "\\x%02x", c);
        else
            snprintf(one, sizeof one, "%c", c);
        size_t n = strlen(one);
        if (shown == PTX_QUOTE_MAX || len + n + 4 > size) {
            if (len + 4 <= size) /* room was kept for it */
                memcpy(buf + len, "...", 4);
            return buf;
        }
        memcpy(buf + len, one, n + 1);
        len += n;
        shown++;
    }
    return buf;
}

bool ptx_is_string_literal(struct ptx_str name)
{
    return ptx_str_starts_with(name, "$str");
}

enum ptx_space ptx_instruction_space(const struct ptx_instruction *ins)
{
    for (uint32_t i = 0; i < ins->nmods; i++) {
        struct ptx_str m = ins->mods[i];
        /* "shared::cta", "shared::cluster", "global", ... */
        if (ptx_str_starts_with(m, "global"))
            return PTX_SPACE_GLOBAL;
        if (ptx_str_starts_with(m, "shared"))
            return PTX_SPACE_SHARED;
        if (ptx_str_is(m, "local"))
            return PTX_SPACE_LOCAL;
        if (ptx_str_starts_with(m, "const"))
            return PTX_SPACE_CONST;
        if (ptx_str_starts_with(m, "param"))
            return PTX_SPACE_PARAM;
    }
    return PTX_SPACE_NONE;
}

struct ptx_function *ptx_find_function(struct ptx_module *module, struct ptx_str name)
{
    struct ptx_function *declared = NULL;
    for (size_t i = 0; i < module->ntop; i++) {
        struct ptx_function *f = &module->top[i]->u.func;
        if (module->top[i]->kind == PTX_FUNCTION && ptx_str_equal(f->name, name)) {
            if (f->has_body)
                return f;
            declared = f;
        }
    }
    return declared;
}

struct ptx_variable *ptx_find_variable(struct ptx_module *module, struct ptx_str name)
{
    for (size_t i = 0; i < module->ntop; i++)
        if (module->top[i]->kind == PTX_VARIABLE && ptx_str_equal(module->top[i]->u.var.name, name))
            return &module->top[i]->u.var;
    return NULL;
}
