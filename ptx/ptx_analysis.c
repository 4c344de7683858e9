/* Owns the kernel analysis (see ptx_analysis.h). For each function, where
 * every register's value may come from (which parameters, a module
 * variable, shared or local memory, or somewhere unknown such as memory), as
 * a flow-insensitive fixpoint over its instructions; then every global or
 * generic memory access is charged to the parameters its address derives
 * from. Device functions are summarised (what they do with each parameter,
 * what makes them unsplittable) and the summaries applied at each call,
 * iterating over the module until nothing changes, so recursion is handled
 * too. */
#include "ptx/ptx_analysis.h"
#include "ptx/ptx_block_waits.h"
#include "ptx/ptx_edit.h"
#include "ptx/ptx_stride_loop.h"
#include "ptx/ptx_thread_stride.h"

#include <stdlib.h>
#include <string.h>

_Static_assert((int)MGPU_FP_LOAD == (int)MGPU_PARAM_LOAD &&
                   (int)MGPU_FP_STORE == (int)MGPU_PARAM_STORE &&
                   (int)MGPU_FP_ATOMIC == (int)MGPU_PARAM_ATOMIC,
               "footprints and the analysis name uses with the same bits");

/* Origins: bits 0..PARAM_BITS-1 the function's parameters (the last bit
 * stands for it and every later one), then these. */
enum {
    PARAM_BITS = 56,
    ORIGIN_GLOBAL_VAR = 56,
    ORIGIN_ON_CHIP = 57, /* shared, local, const, the stack */
    ORIGIN_UNKNOWN = 58,
};
#define BIT(n) ((uint64_t)1 << (n))
#define PARAM_MASK (BIT(PARAM_BITS) - 1)

static uint64_t param_bit(size_t i)
{
    return BIT(i < PARAM_BITS ? i : PARAM_BITS - 1);
}

/* --- what the module's functions do, as far as the fixpoint has got ------------ */

/* A reduction code in the fixpoint: 0 when no atomic was seen yet, the
 * code when all agree, REDUCTION_MIXED once any atomic is not privatisable
 * or two disagree. */
enum { REDUCTION_MIXED = 0xff };

static unsigned char merge_reduction(unsigned char a, unsigned char b)
{
    if (a == 0 || a == b)
        return b;
    return b == 0 ? a : REDUCTION_MIXED;
}

struct summary {
    unsigned *param_use;            /* per parameter */
    unsigned char *param_reduction; /* per parameter */
    size_t nparams;
    unsigned why, notes;
    struct ptx_str detail;
};

enum flow { FLOW_NONE, FLOW_COPY, FLOW_UNKNOWN };
enum {
    CALL_NONE = -1,
    CALL_INDIRECT = -2,
    CALL_EXTERNAL = -3,
};

/* Registers and symbols an operand list names: node ids in the function's
 * pool, and the origins of the symbols. */
struct ref_list {
    uint32_t first, count;
    uint64_t constant;
};

/* One body statement, its names resolved once. */
struct resolved {
    enum flow flow;
    struct ref_list dst, src;
    unsigned access, access2; /* enum mgpu_param_use of a memory access, 0 if none */
    unsigned char reduction;  /* of an atomic access: its code, or REDUCTION_MIXED */
    struct ref_list addr, addr2;
    long callee; /* top-level index of the function called, or CALL_* */
    struct ptx_str callee_name;
    uint32_t first_arg, nargs; /* into arg_lists */
    struct ref_list rets;
};

struct function_view {
    struct module_view *mv;
    const struct ptx_function *f;
    struct ptx_name_set nodes;
    struct ptx_name_set params; /* the function's parameters' names */
    size_t *param_at;           /* per name of params: the first parameter of that name */
    uint64_t *origin;           /* per node */
    uint32_t *pool;
    size_t npool, cappool;
    struct ref_list *arg_lists;
    size_t nargs_total, capargs;
    /* The nodes read as operands (not only written), for whether an atom's
     * result is used; while `writing`, names collected are destinations. */
    uint32_t *reads;
    size_t nreads, capreads;
    bool writing;
    struct resolved *ins; /* one per body statement */
    unsigned why, notes;  /* found in the function's own statements */
    struct ptx_str detail;
    bool failed;
};

struct module_view {
    const struct ptx_module *m;
    struct ptx_name_set symbols; /* variables and functions */
    size_t *symbol_top;          /* per symbol, its top-level index */
    struct summary *summaries;   /* per top-level statement */
    struct function_view *views; /* per top-level statement */
    unsigned module_why;         /* reasons that hold for every kernel */
    struct ptx_str module_detail;
    struct summary any_function; /* every function's reasons and notes, as of the round */
    bool want_accesses;          /* fill each kernel's access_param */
};

static bool pool_push(struct function_view *fv, uint32_t id)
{
    if (fv->npool == fv->cappool) {
        size_t cap = fv->cappool ? fv->cappool * 2 : 32;
        uint32_t *grown = realloc(fv->pool, cap * sizeof *grown);
        if (grown == NULL)
            return false;
        fv->pool = grown;
        fv->cappool = cap;
    }
    fv->pool[fv->npool++] = id;
    return true;
}

static bool reads_push(struct function_view *fv, uint32_t id)
{
    if (fv->nreads == fv->capreads) {
        size_t cap = fv->capreads ? fv->capreads * 2 : 32;
        uint32_t *grown = realloc(fv->reads, cap * sizeof *grown);
        if (grown == NULL)
            return false;
        fv->reads = grown;
        fv->capreads = cap;
    }
    fv->reads[fv->nreads++] = id;
    return true;
}

static bool strstr_n(struct ptx_str s, const char *needle)
{
    size_t n = strlen(needle);
    for (size_t i = 0; i + n <= s.n; i++)
        if (memcmp(s.p + i, needle, n) == 0)
            return true;
    return false;
}

static void set_reason(unsigned *why, struct ptx_str *detail, unsigned reason, struct ptx_str d)
{
    if (reason && !(*why & reason) && detail->n == 0)
        *detail = d;
    *why |= reason;
}

static void function_reason(struct function_view *fv, unsigned reason, struct ptx_str d)
{
    set_reason(&fv->why, &fv->detail, reason, d);
}

/* --- resolving names ----------------------------------------------------------- */

struct collect {
    struct function_view *fv;
    struct ref_list *list;
};

static void collect_name(struct ptx_str name, void *ctx)
{
    struct collect *c = ctx;
    struct function_view *fv = c->fv;
    if (name.p[0] == '%') {
        if (ptx_str_starts_with(name, "%envreg")) {
            function_reason(fv, MGPU_WHY_GRID_SYNC, name);
            return;
        }
        if (ptx_str_starts_with(name, "%cluster") || ptx_str_starts_with(name, "%ncluster") ||
            ptx_str_is(name, "%is_explicit_cluster")) {
            function_reason(fv, MGPU_WHY_CLUSTER, name);
            return;
        }
        if (ptx_str_is(name, "%ctaid") || ptx_str_is(name, "%nctaid")) {
            function_reason(fv, MGPU_WHY_GRID_VECTOR, name);
            return;
        }
        if (ptx_str_starts_with(name, "%ctaid.") || ptx_str_starts_with(name, "%nctaid.")) {
            fv->notes |= MGPU_NOTE_READS_GRID;
            return;
        }
        if (ptx_str_is(name, "%SP") || ptx_str_is(name, "%SPL")) {
            c->list->constant |= BIT(ORIGIN_ON_CHIP);
            return;
        }
        if (memchr(name.p, '.', name.n) != NULL) /* %tid.x and the like */
            return;
    } else {
        long param = ptx_name_set_find(&fv->params, name);
        if (param >= 0) {
            c->list->constant |= param_bit(fv->param_at[param]);
            return;
        }
        long s = ptx_name_set_find(&fv->mv->symbols, name);
        if (s >= 0) {
            const struct ptx_stmt *st = fv->mv->m->top[fv->mv->symbol_top[s]];
            if (st->kind == PTX_VARIABLE) {
                enum ptx_space space = st->u.var.space;
                if (space == PTX_SPACE_CONST)
                    fv->notes |= MGPU_NOTE_CONSTANTS;
                if (space == PTX_SPACE_GLOBAL && !ptx_is_string_literal(name)) {
                    c->list->constant |= BIT(ORIGIN_GLOBAL_VAR);
                    fv->notes |= MGPU_NOTE_GLOBALS;
                } else if (space == PTX_SPACE_TEXTURE) {
                    function_reason(fv, MGPU_WHY_TEXTURE, name);
                } else {
                    c->list->constant |= BIT(ORIGIN_ON_CHIP);
                }
            }
            return; /* a function's address carries no data */
        }
        /* Other names (labels, '_', return parameters, a call's .param
         * arguments) are nodes like registers; only those ever written
         * carry an origin. */
    }
    long id = ptx_name_set_add(&fv->nodes, name);
    if (id < 0 || !pool_push(fv, (uint32_t)id) || (!fv->writing && !reads_push(fv, (uint32_t)id))) {
        fv->failed = true;
        return;
    }
    c->list->count++;
}

static void collect(struct function_view *fv, struct ref_list *list, const struct ptx_str *ops,
                    uint32_t nops)
{
    list->first = (uint32_t)fv->npool;
    list->count = 0;
    list->constant = 0;
    struct collect c = {fv, list};
    for (uint32_t i = 0; i < nops; i++)
        ptx_for_each_name(ops[i], collect_name, &c);
}

/* The same for operands the instruction writes. */
static void collect_written(struct function_view *fv, struct ref_list *list,
                            const struct ptx_str *ops, uint32_t nops)
{
    fv->writing = true;
    collect(fv, list, ops, nops);
    fv->writing = false;
}

/* The reduction code of an atom or red by its modifiers: add, min or max
 * of a 32- or 64-bit integer or float, scalar; REDUCTION_MIXED otherwise
 * (cas, exch, inc, bitwise, half precision, vectors). */
static unsigned char reduction_of(const struct ptx_instruction *ins)
{
    static const char *const ops[] = {"add", "min", "max", NULL};
    static const char *const types[] = {"u32", "s32", "u64", "s64", "f32", "f64", NULL};
    unsigned op = 0, type = 0;
    for (uint32_t i = 0; i < ins->nmods; i++) {
        struct ptx_str m = ins->mods[i];
        for (unsigned k = 0; ops[k] != NULL; k++)
            if (ptx_str_is(m, ops[k]))
                op = op ? REDUCTION_MIXED : k + 1;
        for (unsigned k = 0; types[k] != NULL; k++)
            if (ptx_str_is(m, types[k]))
                type = type ? REDUCTION_MIXED : k + 1;
        if (m.n >= 2 && m.p[0] == 'v' && m.p[1] >= '0' && m.p[1] <= '9')
            return REDUCTION_MIXED;
    }
    if (op == 0 || type == 0 || op == REDUCTION_MIXED || type == REDUCTION_MIXED)
        return REDUCTION_MIXED;
    return (unsigned char)MGPU_REDUCTION(op, type);
}

static const char *const texture_opcodes[] = {"tex",   "tld4", "txq",     "suld", "sust",
                                              "sured", "suq",  "istypep", NULL};
/* Results that are indices or flags, never addresses. */
static const char *const non_address_opcodes[] = {
    "mul",   "mul24", "div", "rem", "shl", "shr", "cvt",  "setp", "set",   "popc", "clz",
    "bfind", "brev",  "bfe", "neg", "abs", "not", "cnot", "vote", "testp", "slct", NULL};
/* Results that derive from their last operand only: mad's addend. */
static const char *const addend_opcodes[] = {"mad", "mad24", "madc", NULL};

/* The spaces named in a cp.* instruction's modifiers: destination first,
 * then source. */
static void copy_spaces(const struct ptx_instruction *ins, enum ptx_space *dst, enum ptx_space *src)
{
    *dst = *src = PTX_SPACE_NONE;
    for (uint32_t i = 0; i < ins->nmods; i++) {
        enum ptx_space s;
        if (ptx_str_starts_with(ins->mods[i], "global"))
            s = PTX_SPACE_GLOBAL;
        else if (ptx_str_starts_with(ins->mods[i], "shared"))
            s = PTX_SPACE_SHARED;
        else
            continue;
        if (*dst == PTX_SPACE_NONE)
            *dst = s;
        else if (*src == PTX_SPACE_NONE)
            *src = s;
    }
}

static void resolve_call(struct function_view *fv, struct resolved *r,
                         const struct ptx_instruction *ins)
{
    uint32_t k = 0;
    if (k < ins->nops && ins->ops[k].p[0] == '(')
        collect_written(fv, &r->rets, &ins->ops[k++], 1);
    if (k >= ins->nops)
        return;
    struct ptx_str callee = ins->ops[k++];
    r->first_arg = (uint32_t)fv->nargs_total;
    if (k < ins->nops && ins->ops[k].p[0] == '(') {
        struct ptx_str list = ins->ops[k];
        const char *p = list.p + 1, *end = list.p + list.n - 1;
        while (p < end) {
            const char *comma = memchr(p, ',', (size_t)(end - p));
            const char *stop = comma ? comma : end;
            struct ptx_str arg = {p, (size_t)(stop - p)};
            if (fv->nargs_total == fv->capargs) {
                size_t cap = fv->capargs ? fv->capargs * 2 : 8;
                struct ref_list *grown = realloc(fv->arg_lists, cap * sizeof *grown);
                if (grown == NULL) {
                    fv->failed = true;
                    return;
                }
                fv->arg_lists = grown;
                fv->capargs = cap;
            }
            collect(fv, &fv->arg_lists[fv->nargs_total++], &arg, 1);
            r->nargs++;
            p = stop + 1;
        }
    }
    r->callee_name = callee;
    if (callee.p[0] == '%') {
        r->callee = CALL_INDIRECT;
        return;
    }
    long s = ptx_name_set_find(&fv->mv->symbols, callee);
    size_t top = s >= 0 ? fv->mv->symbol_top[s] : 0;
    if (s >= 0 && fv->mv->m->top[top]->kind == PTX_FUNCTION && fv->mv->m->top[top]->u.func.has_body)
        r->callee = (long)top;
    else
        r->callee = CALL_EXTERNAL;
}

static void resolve_instruction(struct function_view *fv, struct resolved *r,
                                const struct ptx_stmt *s)
{
    memset(r, 0, sizeof *r);
    r->callee = CALL_NONE;
    if (s->kind == PTX_VERBATIM && s->unparsed) {
        function_reason(fv, MGPU_WHY_UNPARSED, s->u.text);
        return;
    }
    if (s->kind != PTX_INSTRUCTION)
        return;
    const struct ptx_instruction *ins = &s->u.ins;
    struct ptx_str op = ins->opcode;
    enum ptx_space space = ptx_instruction_space(ins);
    bool global_or_generic = space == PTX_SPACE_NONE || space == PTX_SPACE_GLOBAL;
    bool is_atom = ptx_str_is(op, "atom");

    if (ptx_str_in(op, texture_opcodes))
        function_reason(fv, MGPU_WHY_TEXTURE, op);
    if (ptx_str_is(op, "griddepcontrol"))
        function_reason(fv, MGPU_WHY_DEPENDENT_LAUNCH, op);
    if (ptx_str_is(op, "mapa") || ptx_str_is(op, "getctarank") ||
        (ptx_str_is(op, "barrier") && ptx_instruction_has_mod(ins, "cluster")))
        function_reason(fv, MGPU_WHY_CLUSTER, op);
    for (uint32_t i = 0; i < ins->nmods; i++)
        if (ptx_str_is(ins->mods[i], "shared::cluster"))
            function_reason(fv, MGPU_WHY_CLUSTER, ins->mods[i]);
    if ((ptx_str_is(op, "membar") && ptx_instruction_has_mod(ins, "gl")) ||
        (ptx_str_is(op, "fence") && ptx_instruction_has_mod(ins, "gpu")))
        fv->notes |= MGPU_NOTE_SYNC_SCOPE;

    if (ptx_str_is(op, "call")) {
        resolve_call(fv, r, ins);
        return;
    }
    if ((ptx_str_is(op, "ld") || ptx_str_is(op, "ldu")) && ins->nops >= 2) {
        r->flow = space == PTX_SPACE_PARAM ? FLOW_COPY : FLOW_UNKNOWN;
        collect_written(fv, &r->dst, &ins->ops[0], 1);
        collect(fv, &r->src, &ins->ops[1], 1);
        if (global_or_generic) {
            r->access = MGPU_PARAM_LOAD;
            r->addr = r->src;
        }
        return;
    }
    if (ptx_str_is(op, "st") && ins->nops >= 2) {
        if (space == PTX_SPACE_PARAM) { /* an argument for a call, or a return value */
            r->flow = FLOW_COPY;
            collect_written(fv, &r->dst, &ins->ops[0], 1);
            collect(fv, &r->src, &ins->ops[1], ins->nops - 1);
        } else {
            struct ref_list value; /* read, for whether an atom's result is used */
            collect(fv, &value, &ins->ops[1], ins->nops - 1);
            if (global_or_generic) {
                r->access = MGPU_PARAM_STORE;
                collect(fv, &r->addr, &ins->ops[0], 1);
            } else {
                collect(fv, &value, &ins->ops[0], 1);
            }
        }
        return;
    }
    if ((is_atom || ptx_str_is(op, "red")) && ins->nops >= (is_atom ? 2u : 1u)) {
        uint32_t address = is_atom ? 1 : 0;
        struct ref_list values; /* read, for whether an atom's result is used */
        collect(fv, &values, &ins->ops[address + 1], ins->nops - address - 1);
        if (is_atom) {
            r->flow = FLOW_UNKNOWN;
            collect_written(fv, &r->dst, &ins->ops[0], 1);
        }
        if (global_or_generic) {
            r->access = MGPU_PARAM_ATOMIC;
            r->reduction = reduction_of(ins); /* an atom's result is checked once all is read */
            collect(fv, &r->addr, &ins->ops[address], 1);
            if (!ptx_instruction_has_mod(ins, "cta"))
                fv->notes |= MGPU_NOTE_SYNC_SCOPE;
        }
        return;
    }
    if (ptx_str_is(op, "cp")) {
        enum ptx_space dst, src;
        copy_spaces(ins, &dst, &src);
        struct ref_list operands; /* read, for whether an atom's result is used */
        collect(fv, &operands, ins->ops, ins->nops);
        if (ptx_instruction_has_mod(ins, "tensor")) { /* the addresses are in a tensor map */
            fv->notes |= MGPU_NOTE_UNKNOWN_LOAD;
            if (dst == PTX_SPACE_GLOBAL)
                fv->notes |= MGPU_NOTE_UNKNOWN_STORE;
            return;
        }
        if (dst == PTX_SPACE_GLOBAL && ins->nops >= 1) {
            r->access =
                ptx_instruction_has_mod(ins, "reduce") ? MGPU_PARAM_ATOMIC : MGPU_PARAM_STORE;
            collect(fv, &r->addr, &ins->ops[0], 1);
        }
        if (src == PTX_SPACE_GLOBAL && ins->nops >= 2) {
            r->access2 = MGPU_PARAM_LOAD;
            collect(fv, &r->addr2, &ins->ops[1], 1);
        }
        return;
    }
    if (ins->nops < 2 || ptx_str_is(op, "prefetch") || ptx_str_is(op, "prefetchu") ||
        ptx_str_is(op, "bra") || ptx_str_is(op, "brx")) {
        struct ref_list ignored; /* for the reasons its names bring */
        collect(fv, &ignored, ins->ops, ins->nops);
        return;
    }
    /* Everything else computes its first operand from the others. */
    r->flow = FLOW_COPY;
    collect_written(fv, &r->dst, &ins->ops[0], 1);
    if (ptx_str_in(op, non_address_opcodes)) {
        struct ref_list ignored;
        collect(fv, &ignored, &ins->ops[1], ins->nops - 1);
        r->flow = FLOW_NONE;
    } else if (ptx_str_in(op, addend_opcodes)) {
        struct ref_list ignored;
        collect(fv, &ignored, &ins->ops[1], ins->nops - 2);
        collect(fv, &r->src, &ins->ops[ins->nops - 1], 1);
    } else {
        collect(fv, &r->src, &ins->ops[1], ins->nops - 1);
    }
}

/* An atom whose result some instruction reads returns a value that
 * depends on the other GPUs' updates: its parameter is not privatisable. */
static int atom_results_checked(struct function_view *fv)
{
    unsigned char *read = calloc(fv->nodes.count + 1, 1);
    if (read == NULL)
        return -1;
    for (size_t i = 0; i < fv->nreads; i++)
        read[fv->reads[i]] = 1;
    for (size_t i = 0; i < fv->f->nbody; i++) {
        struct resolved *r = &fv->ins[i];
        if (r->access != MGPU_PARAM_ATOMIC || r->flow != FLOW_UNKNOWN)
            continue; /* not an atom */
        for (uint32_t k = 0; k < r->dst.count; k++)
            if (read[fv->pool[r->dst.first + k]])
                r->reduction = REDUCTION_MIXED;
    }
    free(read);
    free(fv->reads);
    fv->reads = NULL;
    fv->nreads = fv->capreads = 0;
    return 0;
}

static int resolve_function(struct module_view *mv, size_t top)
{
    struct function_view *fv = &mv->views[top];
    fv->mv = mv;
    fv->f = &mv->m->top[top]->u.func;
    fv->ins = calloc(fv->f->nbody + 1, sizeof *fv->ins);
    if (fv->ins == NULL)
        return -1;
    /* By name, so that resolving a name costs the same with 10 000
     * parameters as with 2 (the first of equal names wins, as before). */
    fv->param_at = calloc(fv->f->nparams + 1, sizeof *fv->param_at);
    if (fv->param_at == NULL)
        return -1;
    for (size_t i = 0; i < fv->f->nparams; i++) {
        size_t before = fv->params.count;
        long id = ptx_name_set_add(&fv->params, fv->f->params[i].name);
        if (id < 0)
            return -1;
        if (fv->params.count > before)
            fv->param_at[id] = i;
    }
    for (size_t i = 0; i < fv->f->nbody; i++)
        resolve_instruction(fv, &fv->ins[i], fv->f->body[i]);
    if (ptx_function_waits_on_memory(fv->f))
        fv->notes |= MGPU_NOTE_BLOCK_WAITS;
    if (fv->f->is_entry &&
        (strstr_n(fv->f->tail, ".reqnctapercluster") || strstr_n(fv->f->tail, ".explicitcluster") ||
         strstr_n(fv->f->tail, ".maxclusterrank")))
        function_reason(fv, MGPU_WHY_CLUSTER, fv->f->tail);
    fv->origin = calloc(fv->nodes.count + 1, sizeof *fv->origin);
    if (fv->failed || fv->origin == NULL)
        return -1;
    return atom_results_checked(fv);
}

/* --- the fixpoint -------------------------------------------------------------- */

static uint64_t origin_of(const struct function_view *fv, const struct ref_list *l)
{
    uint64_t o = l->constant;
    for (uint32_t i = 0; i < l->count; i++)
        o |= fv->origin[fv->pool[l->first + i]];
    return o;
}

static bool add_origin(struct function_view *fv, const struct ref_list *l, uint64_t o)
{
    bool changed = false;
    for (uint32_t i = 0; i < l->count; i++) {
        uint64_t *slot = &fv->origin[fv->pool[l->first + i]];
        if ((*slot | o) != *slot) {
            *slot |= o;
            changed = true;
        }
    }
    return changed;
}

/* Where each register's value may come from. */
static void propagate(struct function_view *fv)
{
    enum { MAX_ROUNDS = 100 };
    for (int round = 0; round < MAX_ROUNDS; round++) {
        bool changed = false;
        for (size_t i = 0; i < fv->f->nbody; i++) {
            const struct resolved *r = &fv->ins[i];
            if (r->flow == FLOW_COPY)
                changed |= add_origin(fv, &r->dst, origin_of(fv, &r->src));
            else if (r->flow == FLOW_UNKNOWN)
                changed |= add_origin(fv, &r->dst, BIT(ORIGIN_UNKNOWN));
            if (r->callee != CALL_NONE)
                changed |= add_origin(fv, &r->rets, BIT(ORIGIN_UNKNOWN));
        }
        if (!changed)
            return;
    }
    /* Not settled: assume anything may come from anywhere. */
    for (size_t i = 0; i < fv->nodes.count; i++)
        fv->origin[i] = PARAM_MASK | BIT(ORIGIN_UNKNOWN);
}

struct effect {
    unsigned *param_use;
    unsigned char *param_reduction;
    size_t nparams;
    unsigned notes;
    /* Uses of the parameters that share the last bit, charged to them all
     * once at the end rather than at every access. */
    unsigned tail_use;
};

/* Charges a use of memory to the parameters its address derives from;
 * `reduction` is the code of its atomics (REDUCTION_MIXED for any that
 * cannot be privatised). */
static void charge(struct effect *e, uint64_t origin, unsigned use, unsigned char reduction)
{
    if (!(use & MGPU_PARAM_ATOMIC))
        reduction = 0;
    else if (reduction == 0)
        reduction = REDUCTION_MIXED;
    uint64_t params = origin & PARAM_MASK & ~param_bit(PARAM_BITS - 1);
    while (params) {
        size_t i = (size_t)__builtin_ctzll(params);
        params &= params - 1;
        if (i < e->nparams) {
            e->param_use[i] |= use;
            e->param_reduction[i] = merge_reduction(e->param_reduction[i], reduction);
        }
    }
    if (origin & param_bit(PARAM_BITS - 1))
        e->tail_use |= use;
    if (origin == BIT(ORIGIN_ON_CHIP))
        return; /* shared or local memory through a generic address */
    if ((origin & BIT(ORIGIN_UNKNOWN)) || origin == 0) {
        if (use & MGPU_PARAM_LOAD)
            e->notes |= MGPU_NOTE_UNKNOWN_LOAD;
        if (use & (MGPU_PARAM_STORE | MGPU_PARAM_ATOMIC))
            e->notes |= MGPU_NOTE_UNKNOWN_STORE;
    }
}

enum { ALL_USES = MGPU_PARAM_LOAD | MGPU_PARAM_STORE | MGPU_PARAM_ATOMIC };

/* What a call to a function defined elsewhere does. */
static unsigned external_call(struct ptx_str n, struct summary *sum)
{
    if (ptx_str_is(n, "vprintf")) {
        sum->notes |= MGPU_NOTE_PRINTF;
        return MGPU_PARAM_LOAD;
    }
    if (ptx_str_is(n, "__assertfail") || ptx_str_is(n, "__assert_fail"))
        return MGPU_PARAM_LOAD;
    unsigned why = MGPU_WHY_EXTERNAL_CALL;
    if (ptx_str_is(n, "malloc") || ptx_str_is(n, "free") ||
        ptx_str_is(n, "__nv_aligned_device_malloc"))
        why = MGPU_WHY_DEVICE_MALLOC;
    else if (ptx_str_starts_with(n, "cudaLaunchDevice") ||
             ptx_str_starts_with(n, "cudaGetParameterBuffer") ||
             ptx_str_starts_with(n, "cudaStreamCreateWithFlags") ||
             ptx_str_starts_with(n, "cudaDeviceSynchronize"))
        why = MGPU_WHY_DEVICE_LAUNCH;
    else if (ptx_str_starts_with(n, "cudaCG"))
        why = MGPU_WHY_GRID_SYNC;
    set_reason(&sum->why, &sum->detail, why, n);
    return ALL_USES;
}

static void merge_callee(struct summary *sum, const struct summary *callee)
{
    set_reason(&sum->why, &sum->detail, callee->why & ~sum->why, callee->detail);
    sum->notes |= callee->notes;
}

/* The function's summary from its registers' origins and its callees'
 * current summaries. */
static void summarise(struct module_view *mv, size_t top, struct summary *sum)
{
    struct function_view *fv = &mv->views[top];
    memset(sum->param_use, 0, sum->nparams * sizeof *sum->param_use);
    memset(sum->param_reduction, 0, sum->nparams);
    sum->why = 0;
    sum->notes = 0;
    sum->detail.n = 0;
    set_reason(&sum->why, &sum->detail, fv->why, fv->detail);
    struct effect e = {sum->param_use, sum->param_reduction, sum->nparams, fv->notes, 0};
    for (size_t i = 0; i < fv->f->nbody; i++) {
        const struct resolved *r = &fv->ins[i];
        if (r->access)
            charge(&e, origin_of(fv, &r->addr), r->access, r->reduction);
        if (r->access2)
            charge(&e, origin_of(fv, &r->addr2), r->access2, 0);
        if (r->callee == CALL_NONE)
            continue;
        const struct summary *callee = NULL;
        unsigned uniform_use = 0;
        if (r->callee >= 0) {
            callee = &mv->summaries[r->callee];
            merge_callee(sum, callee);
        } else if (r->callee == CALL_INDIRECT) {
            /* Any function of the module may be the target: their union,
             * made once a round (merging every summary at every indirect
             * call was quadratic). */
            merge_callee(sum, &mv->any_function);
            uniform_use = ALL_USES;
        } else {
            uniform_use = external_call(r->callee_name, sum);
        }
        for (uint32_t k = 0; k < r->nargs; k++) {
            unsigned use = uniform_use;
            unsigned char reduction = REDUCTION_MIXED;
            if (callee != NULL) {
                use = k < callee->nparams ? callee->param_use[k] : 0;
                reduction = k < callee->nparams ? callee->param_reduction[k] : 0;
            }
            if (use)
                charge(&e, origin_of(fv, &fv->arg_lists[r->first_arg + k]), use, reduction);
        }
    }
    /* Parameters past the bits are told apart from no other: none is
     * privatised. */
    for (size_t i = PARAM_BITS - 1; e.tail_use && i < e.nparams; i++) {
        e.param_use[i] |= e.tail_use;
        e.param_reduction[i] = REDUCTION_MIXED;
    }
    sum->notes |= e.notes;
}

static bool summaries_equal(const struct summary *a, const struct summary *b)
{
    return a->why == b->why && a->notes == b->notes && a->nparams == b->nparams &&
           memcmp(a->param_use, b->param_use, a->nparams * sizeof *a->param_use) == 0 &&
           memcmp(a->param_reduction, b->param_reduction, a->nparams) == 0;
}

/* --- the module ---------------------------------------------------------------- */

/* Rounds of summaries over the whole module before it is called too complex
 * to analyse: nvcc's modules settle in two. */
#define MODULE_ROUNDS_MAX 64

/* The module's defined functions, each after the functions it calls
 * directly (but for recursion): a depth-first walk of the call graph, on a
 * stack of its own, since call chains can be as long as the module.
 * Returns a malloc'd array and its length, NULL when memory runs out. */
static size_t *callees_first(const struct module_view *mv, size_t *count)
{
    size_t ntop = mv->m->ntop;
    size_t *order = calloc(ntop + 1, sizeof *order);
    struct visit {
        size_t top, next; /* the function, and the body statement to look at next */
    } *stack = calloc(ntop + 1, sizeof *stack);
    unsigned char *seen = calloc(ntop + 1, 1);
    *count = 0;
    if (order == NULL || stack == NULL || seen == NULL) {
        free(order);
        order = NULL;
        goto out;
    }
    for (size_t root = 0; root < ntop; root++) {
        if (mv->views[root].f == NULL || seen[root])
            continue;
        size_t depth = 0;
        stack[depth++] = (struct visit){root, 0};
        seen[root] = 1;
        while (depth > 0) {
            struct visit *v = &stack[depth - 1];
            const struct function_view *fv = &mv->views[v->top];
            bool descended = false;
            while (v->next < fv->f->nbody && !descended) {
                long callee = fv->ins[v->next++].callee;
                if (callee >= 0 && !seen[callee] && mv->views[callee].f != NULL) {
                    seen[callee] = 1;
                    stack[depth++] = (struct visit){(size_t)callee, 0};
                    descended = true;
                }
            }
            if (!descended) {
                order[(*count)++] = v->top;
                depth--;
            }
        }
    }
out:
    free(stack);
    free(seen);
    return order;
}

/* What an indirect call may do: what any function of the module does. */
static void unite_summaries(struct module_view *mv, const size_t *order, size_t norder)
{
    struct summary *all = &mv->any_function;
    all->why = all->notes = 0;
    all->detail.n = 0;
    for (size_t o = 0; o < norder; o++)
        merge_callee(all, &mv->summaries[order[o]]);
}

static void free_view(struct function_view *fv)
{
    ptx_name_set_free(&fv->nodes);
    ptx_name_set_free(&fv->params);
    free(fv->param_at);
    free(fv->origin);
    free(fv->pool);
    free(fv->arg_lists);
    free(fv->reads);
    free(fv->ins);
}

/* The first line of a detail, short enough for a report. */
static char *detail_text(struct ptx_str s)
{
    size_t n = 0;
    while (n < s.n && n < 80 && s.p[n] != '\n')
        n++;
    struct ptx_str line = {s.p, n};
    return ptx_str_dup(line);
}

/* The one parameter an address may come from, or -1. */
static int sole_param(uint64_t origin)
{
    if (origin == 0 || (origin & (origin - 1)) != 0)
        return -1;
    int i = __builtin_ctzll(origin);
    return i < PARAM_BITS - 1 ? i : -1;
}

/* Per statement of the function's body, the parameter its access reaches
 * (-1: none); NULL when memory runs out. */
static int *access_params(const struct function_view *fv)
{
    int *params = malloc((fv->f->nbody + 1) * sizeof *params);
    if (params == NULL)
        return NULL;
    for (size_t i = 0; i < fv->f->nbody; i++) {
        const struct resolved *r = &fv->ins[i];
        params[i] = r->access ? sole_param(origin_of(fv, &r->addr)) : -1;
    }
    return params;
}

/* Each parameter's scatter (ptx_thread_stride.h), from the accesses through it. */
static int fill_scatter(struct mgpu_kernel_info *k, const struct function_view *fv,
                        const int *access_param)
{
    unsigned char *scatter = malloc(fv->f->nparams + 1);
    if (scatter == NULL || ptx_thread_scatter(fv->f, access_param, scatter) != 0) {
        free(scatter);
        return -1;
    }
    for (size_t i = 0; i < fv->f->nparams && i < k->nparams; i++)
        k->params[i].scatter = scatter[i];
    free(scatter);
    return 0;
}

static int fill_kernel_info(struct mgpu_kernel_info *k, const struct ptx_function *f,
                            const struct summary *sum, const struct module_view *mv,
                            const struct function_view *fv, const int *access_param);

static int fill_kernel(struct mgpu_kernel_info *k, const struct ptx_function *f,
                       const struct summary *sum, const struct module_view *mv,
                       const struct function_view *fv)
{
    int *access_param = access_params(fv);
    if (access_param == NULL)
        return -1;
    if (mv->want_accesses) {
        k->nbody = fv->f->nbody;
        k->access_param = access_param;
    }
    int rc = fill_kernel_info(k, f, sum, mv, fv, access_param);
    if (!mv->want_accesses)
        free(access_param);
    return rc;
}

static int fill_kernel_info(struct mgpu_kernel_info *k, const struct ptx_function *f,
                            const struct summary *sum, const struct module_view *mv,
                            const struct function_view *fv, const int *access_param)
{
    k->name = ptx_str_dup(f->name);
    k->why = sum->why | mv->module_why;
    k->notes = sum->notes;
    struct ptx_str detail = sum->why ? sum->detail : mv->module_detail;
    k->stride_bound_param = -1;
    if (!k->why) {
        struct ptx_stride_loop loop;
        switch (ptx_search_stride_loop(f, &loop)) {
        case PTX_STRIDE_FOUND:
            k->stride_bound_param = loop.bound_param;
            break;
        case PTX_STRIDE_TOO_COMPLEX:
            k->why = MGPU_WHY_TOO_COMPLEX;
            detail = ptx_str_of("its grid-stride loop search is over budget");
            break;
        case PTX_STRIDE_NO_MEMORY:
            return -1;
        case PTX_STRIDE_NONE:
            break;
        }
    }
    k->detail = k->why ? detail_text(detail) : NULL;
    k->params = calloc(f->nparams + 1, sizeof *k->params);
    if (k->name == NULL || k->params == NULL || (k->why && k->detail == NULL))
        return -1;
    k->nparams = f->nparams;
    for (size_t i = 0; i < f->nparams; i++) {
        struct mgpu_kernel_param *p = &k->params[i];
        p->name = ptx_str_dup(f->params[i].name);
        if (p->name == NULL)
            return -1;
        p->size = f->params[i].size;
        p->aggregate = f->params[i].aggregate;
        p->floating = f->params[i].floating;
        p->use = sum->param_use[i];
        unsigned char reduction = sum->param_reduction[i];
        p->reduction = p->use == MGPU_PARAM_ATOMIC && reduction != REDUCTION_MIXED ? reduction : 0;
    }
    if (!k->why) {
        k->footprint = malloc(sizeof *k->footprint);
        if (k->footprint == NULL || mgpu_ptx_footprint(f, access_param, k->footprint) != 0) {
            free(k->footprint);
            k->footprint = NULL;
            return -1;
        }
    }
    return fill_scatter(k, fv, access_param);
}

static int analyze(const struct ptx_module *m, struct mgpu_ptx_analysis *out, bool want_accesses)
{
    memset(out, 0, sizeof *out);
    struct module_view mv;
    memset(&mv, 0, sizeof mv);
    mv.m = m;
    mv.want_accesses = want_accesses;
    int rc = -1;
    mv.symbol_top = calloc(m->ntop + 1, sizeof *mv.symbol_top);
    mv.summaries = calloc(m->ntop + 1, sizeof *mv.summaries);
    mv.views = calloc(m->ntop + 1, sizeof *mv.views);
    struct summary scratch = {NULL, NULL, 0, 0, 0, {NULL, 0}};
    size_t *order = NULL, norder = 0;
    size_t max_params = 0;
    if (mv.symbol_top == NULL || mv.summaries == NULL || mv.views == NULL)
        goto out;
    for (size_t t = 0; t < m->ntop; t++) {
        const struct ptx_stmt *s = m->top[t];
        if (s->unparsed)
            set_reason(&mv.module_why, &mv.module_detail, MGPU_WHY_UNPARSED, s->u.text);
        struct ptx_str name = {NULL, 0};
        if (s->kind == PTX_VARIABLE)
            name = s->u.var.name;
        else if (s->kind == PTX_FUNCTION)
            name = s->u.func.name;
        if (name.n == 0)
            continue;
        long id = ptx_name_set_add(&mv.symbols, name);
        if (id < 0)
            goto out;
        /* A definition wins over a declaration of the same name. */
        if ((size_t)id + 1 == mv.symbols.count || s->kind != PTX_FUNCTION || s->u.func.has_body)
            mv.symbol_top[id] = t;
    }
    for (size_t t = 0; t < m->ntop; t++) {
        const struct ptx_stmt *s = m->top[t];
        if (s->kind != PTX_FUNCTION || !s->u.func.has_body)
            continue;
        if (resolve_function(&mv, t) != 0)
            goto out;
        struct summary *sum = &mv.summaries[t];
        sum->nparams = s->u.func.nparams;
        sum->param_use = calloc(sum->nparams + 1, sizeof *sum->param_use);
        sum->param_reduction = calloc(sum->nparams + 1, 1);
        if (sum->param_use == NULL || sum->param_reduction == NULL)
            goto out;
        if (sum->nparams > max_params)
            max_params = sum->nparams;
        propagate(&mv.views[t]);
    }
    scratch.param_use = calloc(max_params + 1, sizeof *scratch.param_use);
    scratch.param_reduction = calloc(max_params + 1, 1);
    if (scratch.param_use == NULL || scratch.param_reduction == NULL)
        goto out;
    /* Callees before callers, so that a chain of calls settles in one
     * round whatever order the functions are defined in; only recursion
     * and indirect calls take more. Summaries only grow, so this settles;
     * a module that has not after MODULE_ROUNDS_MAX rounds is too complex
     * to analyse (every round costs the whole module). */
    order = callees_first(&mv, &norder);
    if (order == NULL)
        goto out;
    bool settled = false;
    for (int round = 0; round < MODULE_ROUNDS_MAX && !settled; round++) {
        unite_summaries(&mv, order, norder);
        settled = true;
        for (size_t o = 0; o < norder; o++) {
            size_t t = order[o];
            scratch.nparams = mv.summaries[t].nparams;
            summarise(&mv, t, &scratch);
            if (!summaries_equal(&scratch, &mv.summaries[t])) {
                settled = false;
                unsigned *keep = mv.summaries[t].param_use;
                memcpy(keep, scratch.param_use, scratch.nparams * sizeof *keep);
                memcpy(mv.summaries[t].param_reduction, scratch.param_reduction, scratch.nparams);
                mv.summaries[t].why = scratch.why;
                mv.summaries[t].notes = scratch.notes;
                mv.summaries[t].detail = scratch.detail;
            }
        }
    }
    if (!settled)
        set_reason(&mv.module_why, &mv.module_detail, MGPU_WHY_TOO_COMPLEX,
                   ptx_str_of("its calls do not settle"));
    for (size_t t = 0; t < m->ntop; t++)
        out->nkernels += mv.views[t].f != NULL && mv.views[t].f->is_entry;
    out->kernels = calloc(out->nkernels + 1, sizeof *out->kernels);
    if (out->kernels == NULL)
        goto out;
    size_t k = 0;
    for (size_t t = 0; t < m->ntop; t++)
        if (mv.views[t].f != NULL && mv.views[t].f->is_entry)
            if (fill_kernel(&out->kernels[k++], mv.views[t].f, &mv.summaries[t], &mv,
                            &mv.views[t]) != 0)
                goto out;
    rc = 0;
out:
    for (size_t t = 0; mv.views && t < m->ntop; t++)
        free_view(&mv.views[t]);
    for (size_t t = 0; mv.summaries && t < m->ntop; t++) {
        free(mv.summaries[t].param_use);
        free(mv.summaries[t].param_reduction);
    }
    free(scratch.param_use);
    free(scratch.param_reduction);
    free(order);
    free(mv.views);
    free(mv.summaries);
    free(mv.symbol_top);
    ptx_name_set_free(&mv.symbols);
    if (rc != 0)
        mgpu_ptx_analysis_free(out);
    return rc;
}

int mgpu_ptx_analyze(const struct ptx_module *m, struct mgpu_ptx_analysis *out)
{
    return analyze(m, out, false);
}

int mgpu_ptx_analyze_accesses(const struct ptx_module *m, struct mgpu_ptx_analysis *out)
{
    return analyze(m, out, true);
}

void mgpu_ptx_analysis_free(struct mgpu_ptx_analysis *a)
{
    for (size_t i = 0; a->kernels && i < a->nkernels; i++) {
        struct mgpu_kernel_info *k = &a->kernels[i];
        for (size_t j = 0; k->params && j < k->nparams; j++)
            free(k->params[j].name);
        free(k->params);
        free(k->name);
        free(k->detail);
        free(k->access_param);
        if (k->footprint != NULL)
            mgpu_kernel_footprint_free(k->footprint);
        free(k->footprint);
    }
    free(a->kernels);
    memset(a, 0, sizeof *a);
}

const char *mgpu_unsplittable_text(unsigned bit)
{
    switch (bit) {
    case MGPU_WHY_GRID_SYNC:
        return "synchronises the whole grid (cooperative groups)";
    case MGPU_WHY_CLUSTER:
        return "uses thread-block clusters";
    case MGPU_WHY_TEXTURE:
        return "uses texture or surface objects, valid only in the context that made them";
    case MGPU_WHY_DEVICE_LAUNCH:
        return "launches kernels from the device";
    case MGPU_WHY_DEVICE_MALLOC:
        return "allocates from the device heap, which each GPU has its own of";
    case MGPU_WHY_EXTERNAL_CALL:
        return "calls a function defined in another module";
    case MGPU_WHY_UNPARSED:
        return "contains PTX that mgpu does not parse";
    case MGPU_WHY_GRID_VECTOR:
        return "reads %ctaid or %nctaid as a whole vector";
    case MGPU_WHY_DEPENDENT_LAUNCH:
        return "uses programmatic dependent launch (griddepcontrol)";
    case MGPU_WHY_REWRITE:
        return "its module cannot be rewritten";
    case MGPU_WHY_TOO_COMPLEX:
        return "too complex to analyse";
    }
    return "unknown reason";
}

const char *mgpu_kernel_note_text(unsigned bit)
{
    switch (bit) {
    case MGPU_NOTE_UNKNOWN_STORE:
        return "stores through pointers of unknown origin";
    case MGPU_NOTE_UNKNOWN_LOAD:
        return "loads through pointers of unknown origin";
    case MGPU_NOTE_GLOBALS:
        return "uses __device__ variables (kept on the home GPU)";
    case MGPU_NOTE_PRINTF:
        return "calls printf";
    case MGPU_NOTE_SYNC_SCOPE:
        return "GPU-scope fences or atomics (made system scope)";
    case MGPU_NOTE_READS_GRID:
        return "reads its block index or the grid size";
    case MGPU_NOTE_CONSTANTS:
        return "reads __constant__ variables (copied to every GPU)";
    case MGPU_NOTE_BLOCK_WAITS:
        return "its blocks wait in a loop for memory other blocks write (never split over "
               "GPUs that share a device)";
    }
    return "unknown note";
}

const char *mgpu_param_use_text(unsigned use)
{
    static const char *const text[8] = {
        "unused", "load",         "store",         "load, store",
        "atomic", "load, atomic", "store, atomic", "load, store, atomic"};
    return text[use & 7];
}

const char *mgpu_reduction_text(unsigned code)
{
    static const char *const text[4][7] = {
        {"none", "none", "none", "none", "none", "none", "none"},
        {"none", "add.u32", "add.s32", "add.u64", "add.s64", "add.f32", "add.f64"},
        {"none", "min.u32", "min.s32", "min.u64", "min.s64", "min.f32", "min.f64"},
        {"none", "max.u32", "max.s32", "max.u64", "max.s64", "max.f32", "max.f64"},
    };
    unsigned op = MGPU_REDUCTION_OP(code), type = MGPU_REDUCTION_TYPE(code);
    return op < 4 && type < 7 ? text[op][type] : "none";
}

size_t mgpu_reduction_element_size(unsigned code)
{
    switch (MGPU_REDUCTION_TYPE(code)) {
    case MGPU_REDUCE_U32:
    case MGPU_REDUCE_S32:
    case MGPU_REDUCE_F32:
        return 4;
    case MGPU_REDUCE_U64:
    case MGPU_REDUCE_S64:
    case MGPU_REDUCE_F64:
        return 8;
    }
    return 0;
}
