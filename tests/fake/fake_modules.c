/* Owns the fake GPU's modules: it loads PTX text only (other images are
 * CUDA_ERROR_INVALID_IMAGE), reading from it each .entry's parameter list
 * (offsets and sizes as the PTX ABI lays them out, for cuFuncGetParamInfo
 * and for running the kernels of test_kernels.h) and each module-scope
 * .global and .const variable (zeroed storage of the declared size for
 * cuModuleGetGlobal; initialisers are not read). Also the magic kernel
 * handles fake_kernel_a and fake_kernel_b, which belong to no module, for
 * the tests written for the old stand-in driver. Modules and functions are
 * never freed, so that an unloaded handle stays unknown to later calls. */
#include "fake_gpu.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct fake_variable {
    char *name;
    void *storage;
    size_t bytes;
};

struct fake_module {
    struct fake_context *ctx;
    struct fake_function **functions;
    size_t nfunctions;
    struct fake_variable *variables;
    size_t nvariables;
};

static struct fake_handles modules = FAKE_HANDLES_INIT;
static struct fake_handles functions = FAKE_HANDLES_INIT;

/* Kernel handles that are pointers to these names. */
/* Modules loaded over the run (tests/fake-module-churn.sh weighs the
 * fake's own memory per module by it). */
FAKE_EXPORT atomic_ulong fake_module_loads;
FAKE_EXPORT const char fake_kernel_a[] = "_Z8kernel_aPfi";
FAKE_EXPORT const char fake_kernel_b[] = "_Z8kernel_bPKfPfm";

bool fake_function_is_magic(CUfunction f)
{
    return f == (CUfunction)fake_kernel_a || f == (CUfunction)fake_kernel_b;
}

struct fake_function *fake_function_of(CUfunction f)
{
    return fake_handles_has(&functions, f) ? (struct fake_function *)f : NULL;
}

struct fake_context *fake_function_context(const struct fake_function *f)
{
    return f->module->ctx;
}

/* --- reading PTX ------------------------------------------------------------------ */

struct scanner {
    const char *text;
    size_t at, size;
};

/* The PTX without comments, NUL-terminated. */
static char *strip_comments(const char *ptx)
{
    size_t n = strlen(ptx);
    char *out = malloc(n + 1), *o = out;
    if (out == NULL)
        return NULL;
    for (size_t i = 0; i < n;) {
        if (ptx[i] == '/' && ptx[i + 1] == '/') {
            while (i < n && ptx[i] != '\n')
                i++;
        } else if (ptx[i] == '/' && ptx[i + 1] == '*') {
            const char *end = strstr(ptx + i + 2, "*/");
            i = end != NULL ? (size_t)(end - ptx) + 2 : n;
            *o++ = ' ';
        } else if (ptx[i] == '"') {
            *o++ = ptx[i++];
            while (i < n && ptx[i] != '"')
                *o++ = ptx[i++];
            if (i < n)
                *o++ = ptx[i++];
        } else {
            *o++ = ptx[i++];
        }
    }
    *o = '\0';
    return out;
}

static bool is_single(char c)
{
    return c == '(' || c == ')' || c == '{' || c == '}' || c == ',' || c == ';' || c == '=';
}

/* The next token into tok (a word, or one of ( ) { } , ; =); false at the end. */
static bool next_token(struct scanner *s, char *tok, size_t len)
{
    while (s->at < s->size && isspace((unsigned char)s->text[s->at]))
        s->at++;
    if (s->at >= s->size)
        return false;
    size_t n = 0;
    if (is_single(s->text[s->at])) {
        tok[n++] = s->text[s->at++];
    } else {
        while (s->at < s->size && !isspace((unsigned char)s->text[s->at]) &&
               !is_single(s->text[s->at])) {
            if (n + 1 < len)
                tok[n++] = s->text[s->at];
            s->at++;
        }
    }
    tok[n] = '\0';
    return true;
}

/* Skips to the brace that closes the one just read. */
static void skip_block(struct scanner *s)
{
    int depth = 1;
    while (s->at < s->size && depth > 0) {
        char c = s->text[s->at++];
        depth += c == '{';
        depth -= c == '}';
    }
}

/* The size of a PTX type (.u32, .f64, .b8 ...), or 0 for no type. */
static size_t type_size(const char *t)
{
    static const struct {
        const char *name;
        size_t size;
    } types[] = {{".b8", 1},  {".u8", 1},   {".s8", 1},  {".b16", 2}, {".u16", 2},   {".s16", 2},
                 {".f16", 2}, {".bf16", 2}, {".b32", 4}, {".u32", 4}, {".s32", 4},   {".f32", 4},
                 {".b64", 8}, {".u64", 8},  {".s64", 8}, {".f64", 8}, {".b128", 16}, {".pred", 1}};
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
        if (strcmp(t, types[i].name) == 0)
            return types[i].size;
    return 0;
}

/* A declaration's parts: `.align A`, a vector width, the type, the name and
 * its array dimensions, as in `.param .align 8 .b8 name[48]`. */
struct declaration {
    size_t align, element, count;
    char name[256];
};

/* Reads the words of one declaration (a parameter, or a variable up to its
 * initialiser) until `stop` (one of , ) ; =). False when it has no type. */
static bool read_declaration(struct scanner *s, const char *stops, char *last,
                             struct declaration *d)
{
    char tok[256];
    size_t vector = 1;
    bool typed = false;
    memset(d, 0, sizeof *d);
    d->count = 1;
    while (next_token(s, tok, sizeof tok)) {
        if (strlen(tok) == 1 && strchr(stops, tok[0]) != NULL) {
            *last = tok[0];
            break;
        }
        if (strcmp(tok, ".align") == 0) {
            char value[64];
            if (!next_token(s, value, sizeof value))
                return false;
            if (!typed) /* after the type it is a .ptr's pointee alignment */
                d->align = strtoul(value, NULL, 10);
        } else if (strcmp(tok, ".v2") == 0 || strcmp(tok, ".v4") == 0 || strcmp(tok, ".v8") == 0) {
            vector = strtoul(tok + 2, NULL, 10);
        } else if (!typed && type_size(tok) > 0) {
            d->element = type_size(tok) * vector;
            typed = true;
        } else if (tok[0] != '.' && typed) {
            /* The name, then dimensions: name[3][4] or name [3]. */
            char *bracket = strchr(tok, '[');
            if (d->name[0] == '\0') {
                size_t n = bracket != NULL ? (size_t)(bracket - tok) : strlen(tok);
                if (n >= sizeof d->name)
                    n = sizeof d->name - 1;
                memcpy(d->name, tok, n);
                d->name[n] = '\0';
            }
            for (char *b = bracket; b != NULL; b = strchr(b + 1, '['))
                d->count *= strtoul(b + 1, NULL, 10);
        }
    }
    if (d->align == 0)
        d->align = d->element;
    return typed && d->name[0] != '\0';
}

static enum fake_kernel_code kernel_code(const char *name)
{
    if (strcmp(name, "mgpu_test_axpy") == 0)
        return FAKE_KERNEL_AXPY;
    if (strcmp(name, "mgpu_test_fill") == 0)
        return FAKE_KERNEL_FILL;
    return FAKE_KERNEL_NONE;
}

/* After `.entry`: the name and the parameter list. */
static struct fake_function *read_entry(struct scanner *s, struct fake_module *m)
{
    char name[256], tok[8];
    if (!next_token(s, name, sizeof name) || !next_token(s, tok, sizeof tok) || tok[0] != '(')
        return NULL;
    struct fake_function *f = calloc(1, sizeof *f);
    if (f == NULL || (f->name = strdup(name)) == NULL) {
        free(f);
        return NULL;
    }
    f->module = m;
    size_t offset = 0;
    char last = ',';
    while (last == ',') {
        struct declaration d;
        last = '\0';
        if (!read_declaration(s, ",)", &last, &d)) {
            if (last == ')' && f->nparams == 0)
                break; /* an empty list */
            free(f->name);
            free(f);
            return NULL;
        }
        if (f->nparams == FAKE_MAX_PARAMS)
            break;
        offset = (offset + d.align - 1) / d.align * d.align;
        f->offsets[f->nparams] = offset;
        f->sizes[f->nparams] = d.element * d.count;
        offset += f->sizes[f->nparams];
        f->grid_param = strcmp(d.name, "__mgpu_grid") == 0 &&
                        f->sizes[f->nparams] == sizeof(struct fake_grid_param);
        f->nparams++;
    }
    f->code = kernel_code(f->name);
    return f;
}

static bool add_function(struct fake_module *m, struct fake_function *f)
{
    struct fake_function **grown =
        realloc(m->functions, (m->nfunctions + 1) * sizeof *m->functions);
    if (grown == NULL)
        return false;
    m->functions = grown;
    m->functions[m->nfunctions++] = f;
    return true;
}

static bool add_variable(struct fake_module *m, const struct declaration *d)
{
    struct fake_variable *grown = realloc(m->variables, (m->nvariables + 1) * sizeof *m->variables);
    if (grown == NULL)
        return false;
    m->variables = grown;
    struct fake_variable *v = &m->variables[m->nvariables];
    v->bytes = d->element * d->count;
    v->name = strdup(d->name);
    v->storage = fake_memory_module_variable(v->bytes, m->ctx);
    if (v->name == NULL || v->storage == NULL) {
        free(v->name);
        if (v->storage)
            fake_memory_module_variable_free(v->storage);
        return false;
    }
    m->nvariables++;
    return true;
}

static void free_module_parts(struct fake_module *m)
{
    for (size_t i = 0; i < m->nvariables; i++) {
        free(m->variables[i].name);
        fake_memory_module_variable_free(m->variables[i].storage);
    }
    free(m->variables);
    m->variables = NULL;
    m->nvariables = 0;
}

/* Reads the module-scope declarations of `ptx`. */
static CUresult read_ptx(struct fake_module *m, const char *ptx)
{
    char *text = strip_comments(ptx);
    if (text == NULL)
        return CUDA_ERROR_OUT_OF_MEMORY;
    struct scanner s = {text, 0, strlen(text)};
    char tok[256];
    CUresult r = CUDA_SUCCESS;
    bool extern_seen = false, versioned = false;
    while (r == CUDA_SUCCESS && next_token(&s, tok, sizeof tok)) {
        if (strcmp(tok, ".version") == 0)
            versioned = true;
        if (strcmp(tok, "{") == 0) {
            skip_block(&s);
        } else if (strcmp(tok, ";") == 0) {
            extern_seen = false;
        } else if (strcmp(tok, ".extern") == 0) {
            extern_seen = true;
        } else if (strcmp(tok, ".entry") == 0) {
            struct fake_function *f = read_entry(&s, m);
            if (f == NULL)
                r = CUDA_ERROR_INVALID_PTX;
            else if (!add_function(m, f))
                r = CUDA_ERROR_OUT_OF_MEMORY;
        } else if (strcmp(tok, ".global") == 0 || strcmp(tok, ".const") == 0) {
            struct declaration d;
            char last = ';';
            if (!read_declaration(&s, ";=", &last, &d))
                r = CUDA_ERROR_INVALID_PTX;
            if (last == '=') /* an initialiser: not read */
                while (next_token(&s, tok, sizeof tok) && strcmp(tok, ";") != 0)
                    ;
            if (r == CUDA_SUCCESS && !extern_seen && !add_variable(m, &d))
                r = CUDA_ERROR_OUT_OF_MEMORY;
            extern_seen = false;
        }
    }
    free(text);
    if (r == CUDA_SUCCESS && !versioned)
        r = CUDA_ERROR_INVALID_PTX;
    return r;
}

/* --- modules ----------------------------------------------------------------------- */

static void write_log(unsigned noptions, CUjit_option *options, void **values, const char *message)
{
    char *buffer = NULL;
    size_t size = 0;
    for (unsigned i = 0; i < noptions && options != NULL && values != NULL; i++) {
        if (options[i] == CU_JIT_ERROR_LOG_BUFFER)
            buffer = values[i];
        if (options[i] == CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES)
            size = (size_t)(uintptr_t)values[i];
    }
    if (buffer != NULL && size > 0)
        snprintf(buffer, size, "%s", message);
}

static CUresult load(CUmodule *out, const void *image, unsigned noptions, CUjit_option *options,
                     void **values)
{
    if (out == NULL || image == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    const unsigned char *bytes = image;
    /* An ELF (cubin) or fatbin image: machine code the fake cannot run. */
    if ((bytes[0] == 0x7f && bytes[1] == 'E') || (bytes[0] == 0x50 && bytes[1] == 0xed) ||
        (bytes[0] == 0x46 && bytes[1] == 0x62)) {
        write_log(noptions, options, values, "fake GPU: only PTX text loads");
        return CUDA_ERROR_INVALID_IMAGE;
    }
    struct fake_module *m = calloc(1, sizeof *m);
    if (m == NULL)
        return CUDA_ERROR_OUT_OF_MEMORY;
    m->ctx = fake_context_current();
    CUresult r = read_ptx(m, image);
    for (size_t i = 0; r == CUDA_SUCCESS && i < m->nfunctions; i++)
        if (!fake_handles_add(&functions, m->functions[i]))
            r = CUDA_ERROR_OUT_OF_MEMORY;
    if (r == CUDA_SUCCESS && !fake_handles_add(&modules, m))
        r = CUDA_ERROR_OUT_OF_MEMORY;
    if (r != CUDA_SUCCESS) {
        write_log(noptions, options, values, "fake GPU: the PTX does not parse");
        for (size_t i = 0; i < m->nfunctions; i++)
            fake_handles_remove(&functions, m->functions[i]);
        free_module_parts(m);
        for (size_t i = 0; i < m->nfunctions; i++) {
            free(m->functions[i]->name);
            free(m->functions[i]);
        }
        free(m->functions);
        free(m);
        return r;
    }
    write_log(noptions, options, values, "");
    fake_live(FAKE_MODULE, 1);
    atomic_fetch_add(&fake_module_loads, 1);
    *out = (CUmodule)m;
    return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuModuleLoadData(CUmodule *out, const void *image)
{
    FAKE_ENTER_INIT("cuModuleLoadData", CUDA_ERROR_OUT_OF_MEMORY);
    fake_wait_for_held_streams("cuModuleLoadData"); /* the driver's waits for every stream */
    return load(out, image, 0, NULL, NULL);
}

FAKE_EXPORT CUresult cuModuleLoadDataEx(CUmodule *out, const void *image, unsigned noptions,
                                        CUjit_option *options, void **values)
{
    FAKE_ENTER_INIT("cuModuleLoadDataEx", CUDA_ERROR_OUT_OF_MEMORY);
    fake_wait_for_held_streams("cuModuleLoadDataEx");
    return load(out, image, noptions, options, values);
}

FAKE_EXPORT CUresult cuModuleLoad(CUmodule *out, const char *path)
{
    FAKE_ENTER_INIT("cuModuleLoad", CUDA_ERROR_OUT_OF_MEMORY);
    FILE *f = path != NULL ? fopen(path, "rb") : NULL;
    if (f == NULL)
        return CUDA_ERROR_FILE_NOT_FOUND;
    char *text = NULL;
    size_t size = 0, capacity = 0, n;
    char chunk[4096];
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0) {
        if (size + n + 1 > capacity) {
            capacity = 2 * (size + n + 1);
            char *grown = realloc(text, capacity);
            if (grown == NULL) {
                free(text);
                fclose(f);
                return CUDA_ERROR_OUT_OF_MEMORY;
            }
            text = grown;
        }
        memcpy(text + size, chunk, n);
        size += n;
    }
    fclose(f);
    if (text == NULL)
        return CUDA_ERROR_INVALID_IMAGE;
    text[size] = '\0';
    CUresult r = load(out, text, 0, NULL, NULL);
    free(text);
    return r;
}

FAKE_EXPORT CUresult cuModuleLoadFatBinary(CUmodule *out, const void *fatbin)
{
    FAKE_ENTER_INIT("cuModuleLoadFatBinary", CUDA_ERROR_OUT_OF_MEMORY);
    (void)out, (void)fatbin;
    return CUDA_ERROR_INVALID_IMAGE;
}

/* Unloads even when it is the call made to fail (see fake_contexts.c). */
FAKE_EXPORT CUresult cuModuleUnload(CUmodule module)
{
    if (!atomic_load(&fake_initialised))
        return CUDA_ERROR_NOT_INITIALIZED;
    bool fail = fake_call_fails("cuModuleUnload");
    struct fake_module *m = (struct fake_module *)module;
    if (!fake_handles_remove(&modules, m))
        return CUDA_ERROR_INVALID_HANDLE;
    for (size_t i = 0; i < m->nfunctions; i++)
        fake_handles_remove(&functions, m->functions[i]);
    free_module_parts(m);
    fake_live(FAKE_MODULE, -1);
    return fail ? CUDA_ERROR_UNKNOWN : CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuModuleGetFunction(CUfunction *out, CUmodule module, const char *name)
{
    FAKE_ENTER_INIT("cuModuleGetFunction", CUDA_ERROR_INVALID_VALUE);
    struct fake_module *m = (struct fake_module *)module;
    if (!fake_handles_has(&modules, m))
        return CUDA_ERROR_INVALID_HANDLE;
    for (size_t i = 0; name != NULL && i < m->nfunctions; i++)
        if (strcmp(m->functions[i]->name, name) == 0) {
            *out = (CUfunction)m->functions[i];
            return CUDA_SUCCESS;
        }
    return CUDA_ERROR_NOT_FOUND;
}

FAKE_EXPORT CUresult cuModuleGetGlobal_v2(CUdeviceptr *where, size_t *bytes, CUmodule module,
                                          const char *name)
{
    FAKE_ENTER_INIT("cuModuleGetGlobal_v2", CUDA_ERROR_INVALID_VALUE);
    struct fake_module *m = (struct fake_module *)module;
    if (!fake_handles_has(&modules, m))
        return CUDA_ERROR_INVALID_HANDLE;
    for (size_t i = 0; name != NULL && i < m->nvariables; i++)
        if (strcmp(m->variables[i].name, name) == 0) {
            if (where)
                *where = (CUdeviceptr)(uintptr_t)m->variables[i].storage;
            if (bytes)
                *bytes = m->variables[i].bytes;
            return CUDA_SUCCESS;
        }
    return CUDA_ERROR_NOT_FOUND;
}

/* --- functions ------------------------------------------------------------------------ */

FAKE_EXPORT CUresult cuFuncGetParamInfo(CUfunction fn, size_t index, size_t *offset, size_t *size)
{
    FAKE_ENTER_INIT("cuFuncGetParamInfo", CUDA_ERROR_INVALID_VALUE);
    struct fake_function *f = fake_function_of(fn);
    if (f == NULL)
        return CUDA_ERROR_INVALID_HANDLE;
    if (index >= f->nparams)
        return CUDA_ERROR_INVALID_VALUE;
    if (offset)
        *offset = f->offsets[index];
    if (size)
        *size = f->sizes[index];
    return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuFuncGetName(const char **name, CUfunction fn)
{
    FAKE_ENTER_INIT("cuFuncGetName", CUDA_ERROR_INVALID_VALUE);
    if (fake_function_is_magic(fn)) {
        *name = (const char *)fn;
        return CUDA_SUCCESS;
    }
    struct fake_function *f = fake_function_of(fn);
    if (f == NULL)
        return CUDA_ERROR_INVALID_HANDLE;
    *name = f->name;
    return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuKernelGetName(const char **name, CUkernel k)
{
    FAKE_ENTER_INIT("cuKernelGetName", CUDA_ERROR_INVALID_VALUE);
    if (!fake_function_is_magic((CUfunction)k))
        return CUDA_ERROR_INVALID_HANDLE;
    *name = (const char *)k;
    return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuFuncGetModule(CUmodule *module, CUfunction fn)
{
    FAKE_ENTER_INIT("cuFuncGetModule", CUDA_ERROR_INVALID_VALUE);
    struct fake_function *f = fake_function_of(fn);
    if (f == NULL)
        return CUDA_ERROR_INVALID_HANDLE;
    *module = (CUmodule)f->module;
    return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuFuncSetAttribute(CUfunction fn, CUfunction_attribute attr, int value)
{
    FAKE_ENTER_INIT("cuFuncSetAttribute", CUDA_ERROR_INVALID_VALUE);
    (void)attr, (void)value;
    return fake_function_of(fn) != NULL ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

FAKE_EXPORT CUresult cuFuncGetAttribute(int *value, CUfunction_attribute attr, CUfunction fn)
{
    FAKE_ENTER_INIT("cuFuncGetAttribute", CUDA_ERROR_INVALID_VALUE);
    if (fake_function_of(fn) == NULL)
        return CUDA_ERROR_INVALID_HANDLE;
    *value = attr == CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK ? 1024 : 0;
    return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuFuncSetCacheConfig(CUfunction fn, CUfunc_cache config)
{
    FAKE_ENTER_INIT("cuFuncSetCacheConfig", CUDA_ERROR_INVALID_VALUE);
    (void)config;
    return fake_function_of(fn) != NULL ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}
