/* Owns reading a probe file's declarations off its PTX (see ptx_probes.h):
 * which functions are probes, where they attach, and the maps they use. */
#include "ptx/ptx_probes.h"

#include "ptx/ptx_text.h"

#include <errno.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ATTACH_PREFIX "__mgpu_probe_attach_"
#define MAP_PREFIX "__mgpu_probe_map_"
/* The longest initializer a declaration may have: a glob of a few hundred
 * characters, or a map's four words. */
#define MAX_DECLARATION_BYTES 1024

/* The sampling number after the '/' or '@' at *at: 1 to PTX_PROBE_MAX_EVERY
 * and followed by one of `ends`; moves *at past it. False, leaving *at,
 * when it is not. */
static bool sampling_number(const char **at, const char *ends, unsigned long *value)
{
    char *stop;
    errno = 0;
    unsigned long v = strtoul(*at + 1, &stop, 10);
    if (errno != 0 || stop == *at + 1 || *stop == '\0' || strchr(ends, *stop) == NULL || v == 0 ||
        v > PTX_PROBE_MAX_EVERY)
        return false;
    *value = v;
    *at = stop;
    return true;
}

const char *ptx_probe_place_name(enum ptx_probe_place place)
{
    static const char *const names[PTX_PROBE_PLACES] = {
        "entry", "exit", "block-entry", "block-exit", "warp-exit", "load", "store", "access"};
    return (unsigned)place < PTX_PROBE_PLACES ? names[place] : "?";
}

uint64_t ptx_probe_map_bytes(const struct ptx_probe_map *map)
{
    if (map->kind == PTX_PROBE_ARRAY)
        return map->length * 8;
    return (PTX_PROBE_RING_HEADER_WORDS + map->length * ptx_probe_record_words(map)) * 8;
}

/* The bytes a variable's initializer holds: a .b8/.u8/.s8 array's
 * elements, or a 64-bit array's elements little-endian, the rest zero up to
 * the declared size. Returns the size, or -1 when the text is not of that
 * form. */
static long initializer_bytes(const struct ptx_variable *v, unsigned char *out, size_t max)
{
    const char *text = v->text.p, *end = v->text.p + v->text.n;
    unsigned width = 0;
    static const struct {
        const char *type;
        unsigned width;
    } types[] = {{".b8 ", 1}, {".u8 ", 1}, {".s8 ", 1}, {".b64 ", 8}, {".u64 ", 8}, {".s64 ", 8}};
    for (size_t i = 0; i < sizeof types / sizeof types[0] && width == 0; i++) {
        const char *hit = memmem(text, (size_t)(end - text), types[i].type, strlen(types[i].type));
        if (hit != NULL)
            width = types[i].width;
    }
    const char *open = memchr(text, '{', (size_t)(end - text));
    if (width == 0 || open == NULL || v->size == 0 || v->size > max)
        return -1;
    memset(out, 0, v->size);
    size_t at = 0;
    const char *p = open + 1;
    while (p < end && *p != '}') {
        while (p < end && (*p == ' ' || *p == ',' || *p == '\t' || *p == '\n'))
            p++;
        if (p >= end || *p == '}')
            break;
        char *stop;
        unsigned long long value = strtoull(p, &stop, 0);
        if (stop == p || at + width > v->size)
            return -1;
        for (unsigned b = 0; b < width; b++)
            out[at + b] = (unsigned char)(value >> (8 * b));
        at += width;
        p = stop;
    }
    return (long)v->size;
}

static int fail(char *err, size_t errlen, const char *file, const char *what)
{
    snprintf(err, errlen, "probe %s: %s", file, what);
    return -1;
}

static bool name_taken(const struct ptx_probe_set *set, const char *function, const char *map)
{
    for (size_t i = 0; function && i < set->nprobes; i++)
        if (strcmp(set->probes[i].function, function) == 0)
            return true;
    for (size_t i = 0; map && i < set->nmaps; i++)
        if (strcmp(set->maps[i].name, map) == 0)
            return true;
    return false;
}

static int add_attach(struct ptx_probe_set *set, size_t file, const struct ptx_variable *v,
                      struct ptx_module *m, char *err, size_t errlen)
{
    const char *fname = set->files[file].name;
    unsigned char bytes[MAX_DECLARATION_BYTES + 1];
    long n = initializer_bytes(v, bytes, MAX_DECLARATION_BYTES);
    char why[160];
    struct ptx_str fn = {v->name.p + strlen(ATTACH_PREFIX), v->name.n - strlen(ATTACH_PREFIX)};
    char *function = ptx_str_dup(fn);
    if (function == NULL)
        return fail(err, errlen, fname, "out of memory");
    if (n < 0) {
        snprintf(why, sizeof why, "the attachment of %.60s is not a string", function);
        free(function);
        return fail(err, errlen, fname, why);
    }
    bytes[n] = '\0';
    const char *text = (const char *)bytes;
    enum ptx_probe_place place = PTX_PROBE_ENTRY;
    bool known = false;
    const char *after = text;
    for (int p = 0; p < PTX_PROBE_PLACES && !known; p++) {
        const char *word = ptx_probe_place_name((enum ptx_probe_place)p);
        size_t len = strlen(word);
        if (strncmp(text, word, len) == 0 &&
            (text[len] == ':' || text[len] == '@' ||
             (text[len] == '/' && ptx_probe_at_access((enum ptx_probe_place)p)))) {
            place = (enum ptx_probe_place)p;
            after = text + len;
            known = true;
        }
    }
    if (!known) {
        snprintf(why, sizeof why,
                 "probe %.60s attaches at none of entry, exit, block-entry, "
                 "block-exit, warp-exit, load, store, access",
                 function);
        free(function);
        return fail(err, errlen, fname, why);
    }
    unsigned long every = 1, blocks = 1;
    const char *bad = NULL;
    if (*after == '/' && !sampling_number(&after, ":@", &every))
        bad = "access";
    if (bad == NULL && *after == '@' && !sampling_number(&after, ":", &blocks))
        bad = "block";
    if (bad != NULL) {
        snprintf(why, sizeof why, "probe %.60s samples one %s in 1 to %u, not \"%.20s\"", function,
                 bad, PTX_PROBE_MAX_EVERY, after + 1);
        free(function);
        return fail(err, errlen, fname, why);
    }
    const char *glob = after + 1;
    const struct ptx_function *f = ptx_find_function(m, fn);
    size_t want_params = ptx_probe_at_access(place) ? 3 : 1;
    if (f == NULL || !f->has_body || f->is_entry || f->nparams != want_params || glob[0] == '\0') {
        snprintf(why, sizeof why,
                 glob[0] == '\0' ? "probe %.60s has an empty glob"
                 : want_params == 3
                     ? "%.60s is not a device function of three parameters defined here (a "
                       "memory probe: declare it with MGPU_PROBE_LOAD, _STORE or _ACCESS)"
                     : "%.60s is not a device function of one parameter defined here",
                 function);
        free(function);
        return fail(err, errlen, fname, why);
    }
    if (name_taken(set, function, NULL)) {
        snprintf(why, sizeof why, "another probe file defines %.60s too", function);
        free(function);
        return fail(err, errlen, fname, why);
    }
    struct ptx_probe *grown = realloc(set->probes, (set->nprobes + 1) * sizeof *grown);
    char *glob_copy = strdup(glob);
    if (grown == NULL || glob_copy == NULL) {
        if (grown)
            set->probes = grown;
        free(function);
        free(glob_copy);
        return fail(err, errlen, fname, "out of memory");
    }
    set->probes = grown;
    set->probes[set->nprobes++] = (struct ptx_probe){.function = function,
                                                     .glob = glob_copy,
                                                     .place = place,
                                                     .every = (unsigned)every,
                                                     .blocks = (unsigned)blocks,
                                                     .file = file};
    return 0;
}

/* Map sizes stay well inside what a GPU can hold and a size_t can count. */
#define MAX_MAP_BYTES (1ull << 36)

static int add_map(struct ptx_probe_set *set, size_t file, const struct ptx_variable *v,
                   char *err, size_t errlen)
{
    const char *fname = set->files[file].name;
    unsigned char bytes[32];
    char why[160];
    struct ptx_str nm = {v->name.p + strlen(MAP_PREFIX), v->name.n - strlen(MAP_PREFIX)};
    char *name = ptx_str_dup(nm);
    if (name == NULL)
        return fail(err, errlen, fname, "out of memory");
    uint64_t words[4] = {0, 0, 0, 0};
    long n = v->size == 32 ? initializer_bytes(v, bytes, sizeof bytes) : -1;
    for (long w = 0; n == 32 && w < 4; w++)
        for (unsigned b = 0; b < 8; b++)
            words[w] |= (uint64_t)bytes[w * 8 + b] << (8 * b);
    struct ptx_probe_map map = {.name = name,
                                .kind = (enum ptx_probe_map_kind)words[0],
                                .length = words[1],
                                .record_bytes = words[2],
                                .initial = words[3],
                                .file = file};
    bool kind_ok = map.kind == PTX_PROBE_ARRAY || map.kind == PTX_PROBE_RING;
    if (n != 32 || !kind_ok || map.length == 0 || map.record_bytes == 0 ||
        map.record_bytes > 4096 || map.length > MAX_MAP_BYTES / map.record_bytes) {
        snprintf(why, sizeof why, "map %.60s is malformed or larger than 64 GiB", name);
        free(name);
        return fail(err, errlen, fname, why);
    }
    if (name_taken(set, NULL, name)) {
        snprintf(why, sizeof why, "another probe file declares the map %.60s too", name);
        free(name);
        return fail(err, errlen, fname, why);
    }
    struct ptx_probe_map *grown = realloc(set->maps, (set->nmaps + 1) * sizeof *grown);
    if (grown == NULL) {
        free(name);
        return fail(err, errlen, fname, "out of memory");
    }
    set->maps = grown;
    set->maps[set->nmaps++] = map;
    return 0;
}

int ptx_probe_set_add(struct ptx_probe_set *set, const char *name, const char *ptx, size_t size,
                      char *err, size_t errlen)
{
    if (!mgpu_ptx_is_text(ptx, size))
        return fail(err, errlen, name, "not PTX text (compile it with nvcc -ptx -rdc=true)");
    struct ptx_probe_file *files = realloc(set->files, (set->nfiles + 1) * sizeof *files);
    if (files == NULL)
        return fail(err, errlen, name, "out of memory");
    set->files = files;
    struct ptx_probe_file *f = &files[set->nfiles];
    f->name = strdup(name);
    f->ptx = malloc(size + 1);
    if (f->name == NULL || f->ptx == NULL) {
        free(f->name);
        free(f->ptx);
        return fail(err, errlen, name, "out of memory");
    }
    memcpy(f->ptx, ptx, size);
    f->ptx[size] = '\0';
    f->size = size;
    size_t file = set->nfiles++;
    struct ptx_module m;
    if (ptx_parse(f->ptx, f->size, &m) != 0) {
        char why[160];
        snprintf(why, sizeof why, "cannot parse its PTX: %s", m.error);
        return fail(err, errlen, name, why);
    }
    size_t probes_before = set->nprobes;
    int rc = 0;
    for (size_t i = 0; i < m.ntop && rc == 0; i++) {
        const struct ptx_stmt *s = m.top[i];
        if (s->kind == PTX_FUNCTION && s->u.func.is_entry && s->u.func.has_body)
            rc = fail(err, errlen, name, "it defines a kernel; a probe file holds device functions");
        else if (s->kind == PTX_VARIABLE && ptx_str_starts_with(s->u.var.name, ATTACH_PREFIX))
            rc = add_attach(set, file, &s->u.var, &m, err, errlen);
        else if (s->kind == PTX_VARIABLE && ptx_str_starts_with(s->u.var.name, MAP_PREFIX))
            rc = add_map(set, file, &s->u.var, err, errlen);
    }
    ptx_module_free(&m);
    if (rc == 0 && set->nprobes == probes_before)
        rc = fail(err, errlen, name,
                  "it declares no probe (MGPU_PROBE_ENTRY or MGPU_PROBE_EXIT of mgpu/probe.h)");
    return rc;
}

int ptx_probe_set_add_file(struct ptx_probe_set *set, const char *name, const char *path,
                           char *err, size_t errlen)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        snprintf(err, errlen, "probe %s: cannot read %s: %s", name, path, strerror(errno));
        return -1;
    }
    char *ptx = malloc(PTX_PROBE_MAX_FILE_BYTES + 1);
    size_t size = ptx ? fread(ptx, 1, PTX_PROBE_MAX_FILE_BYTES + 1, f) : 0;
    fclose(f);
    int rc = -1;
    if (ptx == NULL)
        fail(err, errlen, name, "out of memory");
    else if (size > PTX_PROBE_MAX_FILE_BYTES)
        fail(err, errlen, name, "larger than 16 MiB of PTX");
    else
        rc = ptx_probe_set_add(set, name, ptx, size, err, errlen);
    free(ptx);
    return rc;
}

void ptx_probe_set_free(struct ptx_probe_set *set)
{
    for (size_t i = 0; i < set->nfiles; i++) {
        free(set->files[i].name);
        free(set->files[i].ptx);
    }
    for (size_t i = 0; i < set->nprobes; i++) {
        free(set->probes[i].function);
        free(set->probes[i].glob);
    }
    for (size_t i = 0; i < set->nmaps; i++)
        free(set->maps[i].name);
    free(set->files);
    free(set->probes);
    free(set->maps);
    memset(set, 0, sizeof *set);
}

bool ptx_probe_matches(const struct ptx_probe *probe, const char *mangled, const char *demangled)
{
    return fnmatch(probe->glob, mangled, 0) == 0 ||
           (demangled != NULL && fnmatch(probe->glob, demangled, 0) == 0);
}

unsigned ptx_probe_block_sampling(const struct ptx_probe_set *set, const size_t *probes, size_t n)
{
    unsigned least = 1;
    for (size_t i = 0; i < n; i++) {
        unsigned blocks = set->probes[probes[i]].blocks;
        if (blocks > 1 && (least == 1 || blocks < least))
            least = blocks;
    }
    return least;
}
