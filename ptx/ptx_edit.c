/* Owns the editing primitives the rewriting passes share (see ptx_edit.h). */
#include "ptx/ptx_edit.h"

#include <stdlib.h>
#include <string.h>

void ptx_builder_init(struct ptx_body_builder *b, struct ptx_module *module)
{
    memset(b, 0, sizeof *b);
    b->module = module;
}

void ptx_builder_add(struct ptx_body_builder *b, struct ptx_stmt *stmt)
{
    if (b->failed)
        return;
    if (stmt == NULL) {
        b->failed = true;
        return;
    }
    if (b->count == b->cap) {
        size_t cap = b->cap ? b->cap * 2 : 256;
        struct ptx_stmt **grown = realloc(b->items, cap * sizeof *grown);
        if (grown == NULL) {
            b->failed = true;
            return;
        }
        b->items = grown;
        b->cap = cap;
    }
    b->items[b->count++] = stmt;
}

void ptx_builder_add_text(struct ptx_body_builder *b, const char *text)
{
    if (b->failed)
        return;
    struct ptx_stmt **stmts;
    size_t n;
    if (text == NULL || ptx_parse_statements(b->module, text, &stmts, &n) != 0) {
        b->failed = true;
        return;
    }
    for (size_t i = 0; i < n; i++)
        ptx_builder_add(b, stmts[i]);
}

int ptx_builder_finish(struct ptx_body_builder *b, struct ptx_function *f)
{
    int rc = -1;
    if (!b->failed) {
        struct ptx_stmt **body = ptx_alloc(b->module, (b->count + 1) * sizeof *body);
        if (body != NULL) {
            if (b->count)
                memcpy(body, b->items, b->count * sizeof *body);
            f->body = body;
            f->nbody = b->count;
            rc = 0;
        }
    }
    free(b->items);
    b->items = NULL;
    b->count = b->cap = 0;
    return rc;
}

struct ptx_stmt *ptx_copy_instruction(struct ptx_module *module, const struct ptx_stmt *s)
{
    struct ptx_stmt *copy = ptx_copy_stmt(module, s);
    if (copy == NULL)
        return NULL;
    const struct ptx_instruction *ins = &s->u.ins;
    size_t n = (size_t)ins->nmods + ins->nops;
    struct ptx_str *parts = ptx_alloc(module, (n + 1) * sizeof *parts);
    if (parts == NULL)
        return NULL;
    if (ins->nmods)
        memcpy(parts, ins->mods, ins->nmods * sizeof *parts);
    if (ins->nops)
        memcpy(parts + ins->nmods, ins->ops, ins->nops * sizeof *parts);
    copy->u.ins.mods = parts;
    copy->u.ins.ops = parts + ins->nmods;
    return copy;
}

int ptx_insert_mod(struct ptx_module *module, struct ptx_instruction *ins, uint32_t at,
                   const char *mod)
{
    struct ptx_str *mods = ptx_alloc(module, (ins->nmods + 1) * sizeof *mods);
    if (mods == NULL)
        return -1;
    if (at > ins->nmods)
        at = ins->nmods;
    if (at)
        memcpy(mods, ins->mods, at * sizeof *mods);
    mods[at] = ptx_str_of(mod);
    if (ins->nmods > at)
        memcpy(mods + at + 1, ins->mods + at, (ins->nmods - at) * sizeof *mods);
    ins->mods = mods;
    ins->nmods++;
    return 0;
}

static bool word_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '$' || c == '%';
}

/* The next whole-word occurrence of token in [p, end), or NULL. A '.'
 * after it continues the word ("%ctaid" is not in "%ctaid.x"). */
static const char *find_token(const char *p, const char *end, const char *token, size_t n)
{
    const char *start = p;
    while ((size_t)(end - p) >= n) {
        const char *hit = memchr(p, token[0], (size_t)(end - p) - n + 1);
        if (hit == NULL)
            return NULL;
        if (memcmp(hit, token, n) == 0 && (hit == start || !word_char(hit[-1])) &&
            (hit + n == end || (!word_char(hit[n]) && hit[n] != '.')))
            return hit;
        p = hit + 1;
    }
    return NULL;
}

bool ptx_has_token(struct ptx_str text, const char *token)
{
    return find_token(text.p, text.p + text.n, token, strlen(token)) != NULL;
}

struct ptx_str ptx_replace_token(struct ptx_module *module, struct ptx_str text,
                                 struct ptx_str token, const char *replacement)
{
    size_t rn = strlen(replacement);
    size_t hits = 0;
    const char *end = text.p + text.n;
    char tok[256];
    if (token.n >= sizeof tok)
        return text;
    memcpy(tok, token.p, token.n);
    tok[token.n] = '\0';
    for (const char *p = text.p; (p = find_token(p, end, tok, token.n)) != NULL; p += token.n)
        hits++;
    if (hits == 0)
        return text;
    size_t size = text.n + hits * rn; /* an upper bound */
    char *out = ptx_alloc(module, size + 1);
    struct ptx_str result = {NULL, 0};
    if (out == NULL)
        return result;
    size_t len = 0;
    const char *p = text.p;
    for (const char *hit; (hit = find_token(p, end, tok, token.n)) != NULL; p = hit + token.n) {
        memcpy(out + len, p, (size_t)(hit - p));
        len += (size_t)(hit - p);
        memcpy(out + len, replacement, rn);
        len += rn;
    }
    memcpy(out + len, p, (size_t)(end - p));
    len += (size_t)(end - p);
    out[len] = '\0';
    result.p = out;
    result.n = len;
    return result;
}

void ptx_for_each_name(struct ptx_str operand, void (*fn)(struct ptx_str name, void *ctx),
                       void *ctx)
{
    if (operand.n == 0)
        return; /* an empty operand may have no text at all (p NULL) */
    const char *p = operand.p, *end = operand.p + operand.n;
    while (p < end) {
        char c = *p;
        if (c == '"') { /* strings hold no names */
            for (p++; p < end && *p != '"'; p++)
                ;
            p++;
            continue;
        }
        if (!word_char(c) && c != '.') {
            p++;
            continue;
        }
        const char *start = p;
        while (p < end && (word_char(*p) || (*p == '.' && start[0] == '%')))
            p++;
        if (start[0] == '.' || (start[0] >= '0' && start[0] <= '9')) {
            /* a modifier word (.x of a vector) or a number (0f3F800000) */
            while (p < end && (word_char(*p) || *p == '.'))
                p++;
            continue;
        }
        struct ptx_str name = {start, (size_t)(p - start)};
        fn(name, ctx);
    }
}

static size_t hash_name(struct ptx_str s)
{
    size_t h = 1469598103934665603u;
    for (size_t i = 0; i < s.n; i++)
        h = (h ^ (unsigned char)s.p[i]) * 1099511628211u;
    return h;
}

long ptx_name_set_find(const struct ptx_name_set *set, struct ptx_str name)
{
    if (set->nslots == 0)
        return -1;
    for (size_t i = hash_name(name) & (set->nslots - 1);; i = (i + 1) & (set->nslots - 1)) {
        size_t slot = set->slots[i];
        if (slot == 0)
            return -1;
        if (ptx_str_equal(set->names[slot - 1], name))
            return (long)(slot - 1);
    }
}

long ptx_name_set_add(struct ptx_name_set *set, struct ptx_str name)
{
    long found = ptx_name_set_find(set, name);
    if (found >= 0)
        return found;
    if ((set->count + 1) * 2 > set->nslots) {
        size_t nslots = set->nslots ? set->nslots * 2 : 64;
        size_t *slots = calloc(nslots, sizeof *slots);
        struct ptx_str *names = realloc(set->names, nslots / 2 * sizeof *names);
        if (slots == NULL || names == NULL) {
            free(slots);
            if (names)
                set->names = names;
            return -1;
        }
        set->names = names;
        free(set->slots);
        set->slots = slots;
        set->nslots = nslots;
        for (size_t k = 0; k < set->count; k++) {
            size_t i = hash_name(set->names[k]) & (nslots - 1);
            while (slots[i])
                i = (i + 1) & (nslots - 1);
            slots[i] = k + 1;
        }
    }
    size_t i = hash_name(name) & (set->nslots - 1);
    while (set->slots[i])
        i = (i + 1) & (set->nslots - 1);
    set->names[set->count] = name;
    set->slots[i] = ++set->count;
    return (long)(set->count - 1);
}

void ptx_name_set_free(struct ptx_name_set *set)
{
    free(set->names);
    free(set->slots);
    memset(set, 0, sizeof *set);
}

bool ptx_directive_is(const struct ptx_stmt *s, const char *const *words)
{
    for (size_t i = 0; s->kind == PTX_DIRECTIVE && words[i] != NULL; i++)
        if (ptx_str_starts_with(s->u.text, words[i]))
            return true;
    return false;
}

struct ptx_stmt *ptx_rename_label_operands(struct ptx_module *module, struct ptx_stmt *s,
                                           const struct ptx_name_set *labels, const char *suffix)
{
    struct ptx_stmt *copy = NULL;
    for (uint32_t k = 0; s->kind == PTX_INSTRUCTION && k < s->u.ins.nops; k++) {
        struct ptx_str op = s->u.ins.ops[k];
        if (ptx_name_set_find(labels, op) < 0)
            continue;
        if (copy == NULL && (copy = ptx_copy_instruction(module, s)) == NULL)
            return NULL;
        const char *name = ptx_format(module, "%.*s%s", (int)op.n, op.p, suffix);
        if (name == NULL)
            return NULL;
        copy->u.ins.ops[k] = ptx_str_of(name);
    }
    return copy != NULL ? copy : s;
}

int ptx_add_declaration(struct ptx_module *module, const char *text)
{
    if (text == NULL)
        return -1;
    struct ptx_module scratch;
    /* Parse in a scratch module, then move its statements over: the text is
     * the target's own, so the slices stay valid. */
    if (ptx_parse(text, strlen(text), &scratch) != 0)
        return -1;
    for (size_t i = 0; i < scratch.ntop; i++)
        if (scratch.top[i]->kind == PTX_FUNCTION) { /* its arrays live in the scratch arena */
            ptx_module_free(&scratch);
            return -1;
        }
    size_t at = 0;
    while (at < module->ntop && module->top[at]->kind != PTX_FUNCTION)
        at++;
    struct ptx_stmt **top = ptx_alloc(module, (module->ntop + scratch.ntop + 1) * sizeof *top);
    int rc = -1;
    if (top != NULL) {
        size_t n = 0;
        for (size_t i = 0; i < at; i++)
            top[n++] = module->top[i];
        for (size_t i = 0; i < scratch.ntop; i++) {
            struct ptx_stmt *copy = ptx_copy_stmt(module, scratch.top[i]);
            if (copy == NULL)
                goto out;
            top[n++] = copy;
        }
        for (size_t i = at; i < module->ntop; i++)
            top[n++] = module->top[i];
        module->top = top;
        module->ntop = n;
        rc = 0;
    }
out:
    ptx_module_free(&scratch);
    return rc;
}
