/* A parsed PTX module: the structure the parser builds, the passes walk and
 * edit, and the printer writes back. Text is held as slices of the source
 * (which must outlive the module) or of the module's arena; whatever the
 * parser does not understand is kept verbatim. */
#ifndef MGPU_PTX_MODULE_H
#define MGPU_PTX_MODULE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct ptx_str {
    const char *p;
    size_t n;
};

enum ptx_stmt_kind {
    PTX_VERBATIM,    /* text mgpu keeps as it is: top-level directives, unparsed statements */
    PTX_DIRECTIVE,   /* in a body: .reg, .local, .shared, .param, .pragma, .loc, ... */
    PTX_VARIABLE,    /* top level: a variable declaration or definition */
    PTX_FUNCTION,    /* top level: .entry or .func, declared or defined */
    PTX_LABEL,       /* in a body */
    PTX_INSTRUCTION, /* in a body */
    PTX_BLOCK_OPEN,  /* in a body: '{' */
    PTX_BLOCK_CLOSE, /* in a body: '}' */
};

enum ptx_space {
    PTX_SPACE_NONE,
    PTX_SPACE_GLOBAL,
    PTX_SPACE_CONST,
    PTX_SPACE_SHARED,
    PTX_SPACE_LOCAL,
    PTX_SPACE_PARAM,
    PTX_SPACE_TEXTURE, /* .tex, .texref, .surfref, .samplerref */
};

struct ptx_variable {
    struct ptx_str text; /* the whole declaration, ';' included */
    struct ptx_str name;
    enum ptx_space space;
    bool external;    /* .extern: defined in another module */
    bool initialized; /* has '= ...' */
    size_t size;      /* bytes, 0 when unknown */
};

struct ptx_param {
    struct ptx_str text; /* ".param .u64 name" */
    struct ptx_str name;
    size_t size;    /* bytes, 0 when unknown */
    bool aggregate; /* a .b8 array: a struct passed by value */
    bool floating;  /* of a floating-point type: never a pointer */
};

struct ptx_stmt;

struct ptx_function {
    struct ptx_str head; /* from the first linkage word through the name */
    struct ptx_str name;
    bool is_entry;
    bool has_param_list;
    bool has_body; /* false for a prototype (ending in ';') */
    struct ptx_param *params;
    size_t nparams;
    struct ptx_str tail; /* performance directives between ')' and '{' */
    struct ptx_stmt **body;
    size_t nbody;
};

struct ptx_instruction {
    struct ptx_str guard;  /* "%p1" or "!%p1" (no '@'); empty when unguarded */
    struct ptx_str opcode; /* "ld" */
    struct ptx_str *mods;  /* "global", "nc", "f32": the dot-separated parts after the opcode */
    uint32_t nmods;
    uint32_t nops;
    struct ptx_str *ops; /* operands, trimmed, as written */
};

/* A statement is allocated with the size its kind needs (ptx_stmt_size):
 * a '{' is 16 bytes, not the size of a function. Only the member of u that
 * its kind names may be read, and a statement is never copied as a whole
 * struct: copy ptx_stmt_size(kind) bytes. */
struct ptx_stmt {
    enum ptx_stmt_kind kind;
    bool unparsed;   /* PTX_VERBATIM: a statement the parser did not understand */
    const char *pos; /* where it starts in the text it was parsed from */
    union {
        struct ptx_str text; /* VERBATIM, DIRECTIVE (whole text, terminator included), LABEL name */
        struct ptx_variable var;
        struct ptx_function func;
        struct ptx_instruction ins;
    } u;
};

struct ptx_module;

/* Bytes a statement of this kind takes: its header and its member of u. */
size_t ptx_stmt_size(enum ptx_stmt_kind kind);
/* A fresh statement of this kind in the module's arena: its header set
 * (pos NULL), its member of u zeroed; NULL when memory runs out. */
struct ptx_stmt *ptx_new_stmt(struct ptx_module *module, enum ptx_stmt_kind kind);
/* A shallow copy of s in the module's arena (its arrays shared); NULL when
 * memory runs out. */
struct ptx_stmt *ptx_copy_stmt(struct ptx_module *module, const struct ptx_stmt *s);

struct ptx_arena;

struct ptx_module {
    const char *source;
    size_t source_size;
    struct ptx_stmt **top;
    size_t ntop;
    unsigned target_arch; /* from .target, 0 when absent */
    struct ptx_arena *arena;
    char error[96]; /* why ptx_parse failed: one line */
};

/* How deep blocks may nest in a function body. Each level costs the
 * analyses and passes a frame, so a text of nothing but '{' must be an
 * error, not gigabytes. nvcc nests a few levels. */
#define PTX_MAX_BLOCK_DEPTH 256

/* Parses PTX text. Malformed text does not fail (it is kept verbatim and
 * marked unparsed); returns -1 with a one-line reason in module->error
 * when memory runs out ("out of memory") or blocks nest deeper than
 * PTX_MAX_BLOCK_DEPTH ("line N: blocks nested deeper than 256"). The text
 * must outlive the module. */
int ptx_parse(const char *text, size_t size, struct ptx_module *module);

/* Parses body statements (instructions, directives, labels, '{', '}') out
 * of text the module's arena owns; for passes that add code. A block may
 * open in one call and close in another. Returns 0, or -1 when memory runs
 * out or the text has a statement the parser does not understand. */
int ptx_parse_statements(struct ptx_module *module, const char *text, struct ptx_stmt ***out,
                         size_t *count);

/* Prints the module. Statements read from the module's source start on
 * the line they were on there (blank lines fill the gaps), because ptxas
 * names some symbols after source lines: printed unchanged, a module
 * assembles to the same cubin as its source. Returns a malloc'd
 * NUL-terminated string and its length, or NULL when memory runs out. */
char *ptx_print(const struct ptx_module *module, size_t *length);

void ptx_module_free(struct ptx_module *module);

/* Memory that lives as long as the module, aligned for any type. */
void *ptx_alloc(struct ptx_module *module, size_t size);
/* The same aligned to `align` only (a power of two, at most that of
 * max_align_t): statements and pointer arrays, which need 8, not 16. */
void *ptx_alloc_aligned(struct ptx_module *module, size_t size, size_t align);
/* An array the parser grows with realloc while it does not know its size
 * (a function's body) and then gives to the module without copying it:
 * ptx_owned_grow reallocates `data` (NULL at first) to hold `size` bytes
 * and returns the new data or NULL (the old then stays valid);
 * ptx_owned_adopt makes the module free it with its arena;
 * ptx_owned_free frees one not adopted. */
void *ptx_owned_grow(void *data, size_t size);
void ptx_owned_adopt(struct ptx_module *module, void *data);
void ptx_owned_free(void *data);
/* Bytes of heap the module holds: chunk headers and what is used of its
 * arena's chunks (a chunk's unused tail is address space never touched).
 * For tests that bound memory per byte of text. */
size_t ptx_module_heap_bytes(const struct ptx_module *module);
/* printf into the module's arena; NULL when memory runs out. */
char *ptx_format(struct ptx_module *module, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Helpers for passes. */
/* Whether s is exactly `word`. A NUL inside s is just a byte of the text:
 * it must not match word's terminator and let the loop read past it. */
static inline bool ptx_str_is(struct ptx_str s, const char *word)
{
    size_t i = 0;
    for (; i < s.n; i++)
        if (word[i] == '\0' || word[i] != s.p[i])
            return false;
    return word[i] == '\0';
}
static inline struct ptx_str ptx_str_of(const char *s)
{
    struct ptx_str r = {s, 0};
    while (s[r.n])
        r.n++;
    return r;
}
bool ptx_str_equal(struct ptx_str a, struct ptx_str b);
/* Whether s is one of the words of a NULL-terminated list. */
bool ptx_str_in(struct ptx_str s, const char *const *words);
bool ptx_str_starts_with(struct ptx_str s, const char *prefix);
/* A malloc'd NUL-terminated copy; NULL when memory runs out. */
char *ptx_str_dup(struct ptx_str s);
/* Whether a variable is one of the compiler's string literals ($str,
 * $str$1, ...): immutable, and never named by the host. */
bool ptx_is_string_literal(struct ptx_str name);
bool ptx_instruction_has_mod(const struct ptx_instruction *ins, const char *mod);
/* The bytes of a fundamental type, ".u32" or "u32" (4), ".f16x2" (4),
 * ".bf16" (2); 0 for anything else. */
size_t ptx_type_bytes(struct ptx_str type);
/* The state space an instruction's modifiers name (ld.global, atom.shared::cta),
 * PTX_SPACE_NONE for generic addressing. */
enum ptx_space ptx_instruction_space(const struct ptx_instruction *ins);

/* Text for an error message: s on one line and printable (control bytes,
 * quotes and bytes past ASCII escaped as \n, \xNN), cut after
 * PTX_QUOTE_MAX characters with "...". Returns buf. */
#define PTX_QUOTE_MAX 60
const char *ptx_quote(char *buf, size_t size, struct ptx_str s);

/* The function called `name`, or NULL. */
struct ptx_function *ptx_find_function(struct ptx_module *module, struct ptx_str name);
/* The top-level variable called `name`, or NULL. */
struct ptx_variable *ptx_find_variable(struct ptx_module *module, struct ptx_str name);

#endif
