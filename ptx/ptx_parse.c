/* Owns parsing PTX text into a ptx_module: top-level directives, variables
 * and functions; in function bodies, declarations, labels, blocks and
 * instructions (guard, opcode, modifiers, operands). One pass over the text,
 * slices instead of copies, so that megabytes of PTX parse in milliseconds.
 * What it does not recognise it keeps verbatim. */
#include "ptx/ptx_module.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct parser {
    struct ptx_module *m;
    const char *p, *end;
    const char *stmt_start; /* of the statement being parsed */
    bool out_of_memory;
    const char *too_deep; /* the '{' that nests deeper than PTX_MAX_BLOCK_DEPTH */
};

/* A growable array of statement pointers, malloc'd while it grows (with
 * ptx_owned_grow). Done, a short one is copied into the arena and the
 * array kept for the next list; a long one is given to the module as it
 * is, since copying it would double the peak for a body of a million
 * statements. */
struct stmt_list {
    struct ptx_stmt **items;
    size_t count, cap;
};

static bool list_push(struct parser *ps, struct stmt_list *l, struct ptx_stmt *s)
{
    if (s == NULL)
        return false;
    if (s->kind == PTX_VERBATIM && s->u.text.n == 0)
        return true; /* all of it was an open string or comment, cut off: nothing */
    if (l->count == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 64;
        struct ptx_stmt **grown = ptx_owned_grow(l->items, cap * sizeof *grown);
        if (grown == NULL) {
            ps->out_of_memory = true;
            return false;
        }
        l->items = grown;
        l->cap = cap;
    }
    l->items[l->count++] = s;
    return true;
}

/* Lists up to this many bytes are copied; longer ones adopted. */
enum { LIST_COPY_MAX = 4096 };

static struct ptx_stmt **list_finish(struct parser *ps, struct stmt_list *l, size_t *count)
{
    *count = l->count;
    if (l->count * sizeof *l->items > LIST_COPY_MAX) {
        /* Shrinking in place: the unused tail goes back. */
        struct ptx_stmt **items = ptx_owned_grow(l->items, l->count * sizeof *items);
        if (items == NULL)
            items = l->items;
        ptx_owned_adopt(ps->m, items);
        l->items = NULL;
        l->count = l->cap = 0;
        return items;
    }
    struct ptx_stmt **items = ptx_alloc_aligned(ps->m, (l->count ? l->count : 1) * sizeof *items,
                                                _Alignof(struct ptx_stmt *));
    if (items == NULL)
        ps->out_of_memory = true;
    else if (l->count)
        memcpy(items, l->items, l->count * sizeof *items);
    l->count = 0;
    return items;
}

static struct ptx_stmt *new_stmt(struct parser *ps, enum ptx_stmt_kind kind)
{
    struct ptx_stmt *s = ptx_new_stmt(ps->m, kind);
    if (s == NULL) {
        ps->out_of_memory = true;
        return NULL;
    }
    s->pos = ps->stmt_start;
    return s;
}

static struct ptx_str slice(const char *from, const char *to)
{
    struct ptx_str s = {from, (size_t)(to - from)};
    return s;
}

static bool is_space(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

static bool is_ident_start(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == '$' || c == '%';
}

static bool is_ident_char(char c)
{
    return is_ident_start(c) || (c >= '0' && c <= '9');
}

static bool is_digit(char c)
{
    return c >= '0' && c <= '9';
}

/* Past a comment starting at p (which must start one), or p itself. */
static const char *skip_comment(const char *p, const char *end)
{
    if (p + 1 < end && p[0] == '/' && p[1] == '/') {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        return nl ? nl + 1 : end;
    }
    if (p + 1 < end && p[0] == '/' && p[1] == '*') {
        for (const char *q = p + 2; q + 1 < end; q++)
            if (q[0] == '*' && q[1] == '/')
                return q + 2;
        return end;
    }
    return p;
}

static const char *skip_space_at(const char *p, const char *end)
{
    for (;;) {
        while (p < end && is_space(*p))
            p++;
        const char *q = skip_comment(p, end);
        if (q == p)
            return p;
        p = q;
    }
}

static void skip_space(struct parser *ps)
{
    ps->p = skip_space_at(ps->p, ps->end);
}

/* Past a string literal starting at p. */
static const char *skip_string(const char *p, const char *end)
{
    for (p++; p < end && *p != '"'; p++)
        if (*p == '\\' && p + 1 < end)
            p++;
    return p < end ? p + 1 : end;
}

/* Past a string or comment starting at p, or p itself when none does. */
static const char *skip_literal(const char *p, const char *end)
{
    return *p == '"' ? skip_string(p, end) : skip_comment(p, end);
}

/* The ';' that ends the statement starting at p, outside strings, comments
 * and brackets; `end` when there is none. With stop_at_close, an unmatched
 * '}' ends the search too (an instruction missing its ';' before a block's
 * end). */
static const char *find_semicolon(const char *p, const char *end, bool stop_at_close)
{
    /* Only braces decide where a block ends: a '[' or '(' left open must not
     * let the statement run on through the '}' (which the printer writes on
     * a line of its own). */
    long depth = 0, braces = 0;
    while (p < end) {
        char c = *p;
        if (c == ';' && depth <= 0)
            return p;
        const char *q = skip_literal(p, end);
        if (q != p) {
            p = q;
            continue;
        }
        if (c == '{' || c == '(' || c == '[') {
            depth++;
            braces += c == '{';
        } else if (c == '}' || c == ')' || c == ']') {
            if (c == '}' && braces <= 0 && stop_at_close)
                return p;
            depth--;
            braces -= c == '}';
        }
        p++;
    }
    return end;
}

/* The bracket matching the one at p, or NULL when the text ends first.
 * Only brackets of its own kind count: a '[' left open inside a parameter
 * list must not hide the list's ')'. */
static const char *find_close(const char *p, const char *end)
{
    char open = *p, close = open == '(' ? ')' : open == '[' ? ']' : '}';
    long depth = 0;
    while (p < end) {
        char c = *p;
        const char *q = skip_literal(p, end);
        if (q != p) {
            p = q;
            continue;
        }
        if (c == open)
            depth++;
        else if (c == close && --depth == 0)
            return p;
        p++;
    }
    return NULL;
}

/* The first c in [p, end) outside strings and comments, or NULL. */
static const char *find_outside_literals(const char *p, const char *end, char c)
{
    while (p < end) {
        const char *q = skip_literal(p, end);
        if (q != p)
            p = q;
        else if (*p == c)
            return p;
        else
            p++;
    }
    return NULL;
}

/* Past the bracket matching the one at p, or `end`. */
static const char *skip_balanced(const char *p, const char *end)
{
    const char *close = find_close(p, end);
    return close ? close + 1 : end;
}

/* Whether the string or comment starting at p (which must start one) ends
 * before `end`. A // comment ends only at a newline. */
static bool literal_closed(const char *p, const char *end)
{
    if (*p == '"') {
        for (p++; p < end; p++)
            if (*p == '\\' && p + 1 < end)
                p++;
            else if (*p == '"')
                return true;
        return false;
    }
    if (p[1] == '/')
        return memchr(p, '\n', (size_t)(end - p)) != NULL;
    for (const char *q = p + 2; q + 1 < end; q++)
        if (q[0] == '*' && q[1] == '/')
            return true;
    return false;
}

/* For a statement from `from` that runs to the end of the text: where its
 * text really ends. A string or comment the text ends inside is cut off
 * (comments are not kept, and an open one would swallow whatever the
 * printer writes after the statement), then trailing space, so that the
 * printed statement reads back as the same statement. In a body
 * (in_body), so is a '{' left open, which would swallow the '}' the
 * printer writes after the body. */
static const char *complete_end(const char *from, const char *end, bool in_body)
{
    const char *cut = end, *open_brace = NULL;
    long braces = 0;
    for (const char *p = from; p < end;) {
        const char *q = skip_literal(p, end);
        if (q == p) {
            if (*p == '{' && braces++ == 0)
                open_brace = p;
            else if (*p == '}' && braces > 0)
                braces--;
            p++;
        } else if (q == end && !literal_closed(p, end)) {
            cut = p;
            break;
        } else {
            p = q;
        }
    }
    if (in_body && braces > 0 && open_brace < cut)
        cut = open_brace;
    while (cut > from && is_space(cut[-1]))
        cut--;
    return cut;
}

static const char *line_end(const char *p, const char *end)
{
    const char *nl = memchr(p, '\n', (size_t)(end - p));
    return nl ? nl : end;
}

/* A directive word at ps->p ('.' then letters, digits, '_'); empty if none. */
static struct ptx_str read_directive(struct parser *ps)
{
    const char *s = ps->p;
    if (s >= ps->end || *s != '.')
        return slice(s, s);
    const char *q = s + 1;
    while (q < ps->end && (is_ident_char(*q) && *q != '%' && *q != '$'))
        q++;
    ps->p = q;
    return slice(s, q);
}

static struct ptx_str read_ident(struct parser *ps)
{
    const char *s = ps->p;
    if (s < ps->end && is_ident_start(*s)) {
        const char *q = s + 1;
        while (q < ps->end && is_ident_char(*q))
            q++;
        ps->p = q;
    }
    return slice(s, ps->p);
}

static struct ptx_str trim(struct ptx_str s)
{
    while (s.n && is_space(s.p[0])) {
        s.p++;
        s.n--;
    }
    while (s.n && is_space(s.p[s.n - 1]))
        s.n--;
    return s;
}

/* A slice without its comments (copied into the arena only when it has
 * any), trimmed. */
static struct ptx_str strip_comments(struct parser *ps, struct ptx_str s)
{
    if (memchr(s.p, '/', s.n) == NULL)
        return trim(s);
    char *copy = ptx_alloc(ps->m, s.n + 1);
    if (copy == NULL) {
        ps->out_of_memory = true;
        return trim(s);
    }
    size_t n = 0;
    const char *p = s.p, *end = s.p + s.n;
    while (p < end) {
        const char *q = skip_comment(p, end);
        if (q != p) {
            copy[n++] = ' ';
            p = q;
        } else if (*p == '"') {
            q = skip_string(p, end);
            memcpy(copy + n, p, (size_t)(q - p));
            n += (size_t)(q - p);
            p = q;
        } else {
            copy[n++] = *p++;
        }
    }
    copy[n] = '\0';
    return trim(slice(copy, copy + n));
}

/* Splits [p, end) at commas outside brackets into trimmed parts. Returns the
 * number of parts, or -1 when there are more than max. */
static long split_commas(struct parser *ps, const char *p, const char *end, struct ptx_str *parts,
                         size_t max)
{
    struct ptx_str whole = trim(slice(p, end));
    if (whole.n == 0)
        return 0;
    size_t n = 0;
    int depth = 0;
    const char *start = p;
    for (const char *q = p; q <= end; q++) {
        if (q < end) {
            char c = *q;
            const char *after = skip_literal(q, end);
            if (after != q) {
                q = after - 1;
                continue;
            }
            if (c == '(' || c == '[' || c == '{')
                depth++;
            else if (c == ')' || c == ']' || c == '}')
                depth--;
            if (c != ',' || depth > 0)
                continue;
        }
        if (n == max)
            return -1;
        parts[n++] = strip_comments(ps, slice(start, q));
        start = q + 1;
    }
    if (n == 1 && parts[0].n == 0) /* only comments: printed, an empty list */
        return 0;
    return (long)n;
}

/* Bytes of a PTX fundamental type (".u64" → 8), 0 when it is not one. */
size_t ptx_type_bytes(struct ptx_str t)
{
    if (t.n > 0 && t.p[0] == '.') {
        t.p++;
        t.n--;
    }
    if (t.n < 2)
        return 0;
    char k = t.p[0];
    if (k != 'b' && k != 'u' && k != 's' && k != 'f')
        return 0;
    size_t bits = 0;
    size_t i = 1;
    if (k == 'b' && t.n > 2 && t.p[1] == 'f') /* .bf16, .bf16x2 */
        i = 2;
    for (; i < t.n && is_digit(t.p[i]); i++)
        if ((bits = bits * 10 + (size_t)(t.p[i] - '0')) > 1024)
            return 0; /* no such type; and the number must not overflow */
    if (i + 2 == t.n && t.p[i] == 'x' && t.p[i + 1] == '2') /* .f16x2, .bf16x2 */
        bits *= 2;
    else if (i != t.n)
        return 0;
    return bits % 8 == 0 ? bits / 8 : 0;
}

/* The name and size of a declaration's declarator: `.align 8 .b8 name[16]`,
 * `.v4 .f32 v`, `.u64 .ptr .global .align 16 p`. Reads from p up to end. */
static void read_declarator(const char *p, const char *end, struct ptx_str *name, size_t *size,
                            bool *aggregate, bool *floating)
{
    size_t elem = 0, vec = 1, count = 1;
    bool array = false, unknown = false;
    name->p = NULL;
    name->n = 0;
    if (floating)
        *floating = false;
    while (p < end) {
        p = skip_space_at(p, end);
        if (p >= end || *p == '=' || *p == ';' || *p == ',')
            break;
        if (*p == '.') {
            const char *q = p + 1;
            while (q < end && is_ident_char(*q) && *q != '%' && *q != '$')
                q++;
            struct ptx_str w = slice(p, q);
            if (ptx_str_is(w, ".v2"))
                vec = 2;
            else if (ptx_str_is(w, ".v4"))
                vec = 4;
            else if (ptx_str_is(w, ".v8"))
                vec = 8;
            else if (ptx_type_bytes(w)) {
                elem = ptx_type_bytes(w);
                if (floating)
                    *floating = w.p[1] == 'f';
            }
            p = q;
            if (ptx_str_is(w, ".attribute")) { /* .attribute(.managed) */
                p = skip_space_at(p, end);
                if (p < end && *p == '(')
                    p = skip_balanced(p, end);
            }
            if (ptx_str_is(w, ".align")) {
                p = skip_space_at(p, end);
                while (p < end && is_digit(*p))
                    p++;
            }
            continue;
        }
        if (is_ident_start(*p) && name->p == NULL) {
            const char *q = p + 1;
            while (q < end && is_ident_char(*q))
                q++;
            *name = slice(p, q);
            p = q;
            continue;
        }
        if (*p == '[' && name->p != NULL) {
            array = true;
            const char *q = p + 1;
            size_t dim = 0;
            bool digits = false;
            while (q < end && is_digit(*q)) {
                /* a size that does not fit is unknown, never a wrapped one */
                if (dim > (SIZE_MAX - 9) / 10)
                    unknown = true;
                else
                    dim = dim * 10 + (size_t)(*q - '0');
                digits = true;
                q++;
            }
            if (!digits || (dim && count > SIZE_MAX / dim))
                unknown = true;
            else
                count *= dim;
            p = skip_balanced(p, end);
            continue;
        }
        if (*p == '<' && name->p != NULL) { /* %r<10>: a register range */
            while (p < end && *p != '>')
                p++;
            if (p < end)
                p++;
            continue;
        }
        p++;
    }
    if (elem && count > SIZE_MAX / (elem * vec))
        unknown = true;
    *size = unknown ? 0 : elem * vec * count;
    if (aggregate)
        *aggregate = array && elem == 1;
}

static struct ptx_stmt *verbatim(struct parser *ps, const char *from, const char *to, bool unparsed)
{
    struct ptx_stmt *s = new_stmt(ps, PTX_VERBATIM);
    if (s) {
        /* without the space a text that ends after it leaves (".visible\n") */
        s->u.text = trim(slice(from, to));
        s->unparsed = unparsed;
    }
    return s;
}

/* A run of empty statements from the ';' at ps->p: ';'s with only space
 * and comments between. ptxas rejects an empty statement, so the run is
 * kept, unparsed, to be printed as it was; as one statement, so that a
 * text of nothing but ';' does not cost a statement per byte. */
static struct ptx_stmt *empty_statements(struct parser *ps)
{
    const char *start = ps->p, *last = ps->p;
    for (const char *q = start + 1;;) {
        q = skip_space_at(q, ps->end);
        if (q >= ps->end || *q != ';')
            break;
        last = q++;
    }
    ps->p = last + 1;
    return verbatim(ps, start, last + 1, true);
}

/* A statement up to and including its ';'. One the text ends inside ends
 * where complete_end says, and so does the text. */
static const char *through_semicolon(struct parser *ps, bool stop_at_close)
{
    const char *semi = find_semicolon(ps->p, ps->end, stop_at_close);
    if (semi < ps->end && *semi == ';')
        return semi + 1;
    if (semi < ps->end) { /* at a block's '}': the statement without the space before it */
        while (semi > ps->p && is_space(semi[-1]))
            semi--;
        return semi;
    }
    ps->end = complete_end(ps->p, ps->end, stop_at_close);
    return ps->end;
}

static const char *const linkage_words[] = {".visible", ".extern", ".weak", ".common", NULL};
static const char *const line_directives[] = {".version", ".target", ".address_size",
                                              ".file",    ".loc",    NULL};

static enum ptx_space space_of(struct ptx_str w)
{
    if (ptx_str_is(w, ".global"))
        return PTX_SPACE_GLOBAL;
    if (ptx_str_is(w, ".const"))
        return PTX_SPACE_CONST;
    if (ptx_str_is(w, ".shared"))
        return PTX_SPACE_SHARED;
    if (ptx_str_is(w, ".local"))
        return PTX_SPACE_LOCAL;
    if (ptx_str_is(w, ".param"))
        return PTX_SPACE_PARAM;
    if (ptx_str_is(w, ".tex") || ptx_str_is(w, ".texref") || ptx_str_is(w, ".surfref") ||
        ptx_str_is(w, ".samplerref"))
        return PTX_SPACE_TEXTURE;
    return PTX_SPACE_NONE;
}

/* --- function bodies ---------------------------------------------------------- */

enum { MAX_PARTS = 64 };

static struct ptx_stmt *parse_instruction(struct parser *ps, bool stop_at_close)
{
    const char *start = ps->p;
    struct ptx_instruction ins;
    memset(&ins, 0, sizeof ins);
    if (*ps->p == '@') {
        const char *g = ++ps->p;
        while (ps->p < ps->end && !is_space(*ps->p) && *ps->p != ';')
            ps->p++;
        ins.guard = slice(g, ps->p);
        skip_space(ps);
    }
    const char *op = ps->p;
    /* "@ x;" has no predicate: kept verbatim, since printing the guard
     * only when it has text would drop the '@'. */
    bool empty_guard = *start == '@' && ins.guard.n == 0;
    if (empty_guard || op >= ps->end ||
        !((*op >= 'a' && *op <= 'z') || (*op >= 'A' && *op <= 'Z'))) {
        ps->p = start;
        const char *to = through_semicolon(ps, stop_at_close);
        ps->p = to;
        return verbatim(ps, start, to, true);
    }
    while (ps->p < ps->end && (is_ident_char(*ps->p) || *ps->p == '.' || *ps->p == ':') &&
           *ps->p != '%')
        ps->p++;
    struct ptx_str mods[MAX_PARTS];
    size_t nmods = 0;
    const char *part = op;
    bool too_many = false;
    for (const char *q = op; q <= ps->p; q++) {
        if (q < ps->p && *q != '.')
            continue;
        if (part == op)
            ins.opcode = slice(op, q);
        else if (nmods < MAX_PARTS)
            mods[nmods++] = slice(part, q);
        else
            too_many = true;
        part = q + 1;
    }
    const char *semi = find_semicolon(ps->p, ps->end, stop_at_close);
    struct ptx_str ops[MAX_PARTS];
    long nops = split_commas(ps, ps->p, semi, ops, MAX_PARTS);
    if (semi >= ps->end || *semi != ';' || nops < 0 || too_many || ins.opcode.n == 0) {
        ps->p = start;
        const char *to = through_semicolon(ps, stop_at_close);
        ps->p = to;
        return verbatim(ps, start, to, true);
    }
    ps->p = semi + 1;
    struct ptx_stmt *s = new_stmt(ps, PTX_INSTRUCTION);
    if (s == NULL)
        return NULL;
    ins.nmods = (uint32_t)nmods;
    ins.nops = (uint32_t)nops;
    if (nmods + (size_t)nops == 0) {
        /* "ret;": no array (a text of them would pay 16 bytes a statement
         * for nothing); an empty one nobody writes, never NULL, which
         * memcpy and pointer arithmetic must not see. */
        static struct ptx_str no_parts[1];
        ins.mods = ins.ops = no_parts;
        s->u.ins = ins;
        return s;
    }
    ins.mods = ptx_alloc_aligned(ps->m, (nmods + (size_t)nops) * sizeof(struct ptx_str),
                                 _Alignof(struct ptx_str));
    if (ins.mods == NULL) {
        ps->out_of_memory = true;
        return NULL;
    }
    ins.ops = ins.mods + nmods;
    if (nmods)
        memcpy(ins.mods, mods, nmods * sizeof *mods);
    if (nops)
        memcpy(ins.ops, ops, (size_t)nops * sizeof *ops);
    s->u.ins = ins;
    return s;
}

/* One body statement at ps->p (which is not space). depth is the block
 * nesting inside the function; a '}' at depth 0 is the function's end and is
 * not consumed. Returns NULL only when memory runs out. */
static struct ptx_stmt *parse_body_statement(struct parser *ps, int *depth, bool stop_at_close)
{
    const char *start = ps->p;
    ps->stmt_start = start;
    char c = *start;
    if (c == ';')
        return empty_statements(ps);
    if (c == '{') {
        ps->p++;
        ++*depth;
        return new_stmt(ps, PTX_BLOCK_OPEN);
    }
    if (c == '}') {
        ps->p++;
        --*depth;
        return new_stmt(ps, PTX_BLOCK_CLOSE);
    }
    if (c == '.') {
        struct ptx_str word = read_directive(ps);
        const char *to = ptx_str_in(word, line_directives) ? line_end(ps->p, ps->end)
                                                           : through_semicolon(ps, stop_at_close);
        ps->p = to;
        struct ptx_stmt *s = new_stmt(ps, PTX_DIRECTIVE);
        if (s)
            s->u.text = trim(slice(start, to));
        return s;
    }
    if (c != '@' && c != '%' && is_ident_start(c)) {
        struct ptx_str name = read_ident(ps);
        const char *q = ps->p;
        /* "L:" with any white space or comment before the ':', newlines
         * too: the printer joins an instruction's lines and drops its
         * comments, which made "L\n:" and "L//c\n:" labels when parsed
         * again. */
        q = skip_space_at(q, ps->end);
        if (q < ps->end && *q == ':' && (q + 1 >= ps->end || q[1] != ':')) {
            ps->p = q + 1;
            struct ptx_stmt *s = new_stmt(ps, PTX_LABEL);
            if (s)
                s->u.text = name;
            return s;
        }
        ps->p = start;
    }
    return parse_instruction(ps, stop_at_close);
}

/* The body after '{' up to its matching '}' (consumed). */
static void parse_body(struct parser *ps, struct ptx_function *f, struct stmt_list *scratch)
{
    int depth = 0;
    for (;;) {
        skip_space(ps);
        if (ps->p >= ps->end)
            break;
        if (*ps->p == '}' && depth == 0) {
            ps->p++;
            break;
        }
        if (!list_push(ps, scratch, parse_body_statement(ps, &depth, true)))
            break;
        if (depth > PTX_MAX_BLOCK_DEPTH) {
            ps->too_deep = ps->stmt_start;
            break;
        }
    }
    /* A text that ends inside blocks gets them closed, as the printer's
     * '}' after the body would close the innermost one on reading back. */
    ps->stmt_start = NULL;
    while (depth > 0 && !ps->too_deep && !ps->out_of_memory &&
           list_push(ps, scratch, new_stmt(ps, PTX_BLOCK_CLOSE)))
        depth--;
    f->body = list_finish(ps, scratch, &f->nbody);
}

int ptx_parse_statements(struct ptx_module *module, const char *text, struct ptx_stmt ***out,
                         size_t *count)
{
    struct parser ps = {module, text, text + strlen(text), text, false, NULL};
    struct stmt_list list = {NULL, 0, 0};
    int depth = 0;
    bool unparsed = false;
    for (;;) {
        skip_space(&ps);
        if (ps.p >= ps.end)
            break;
        struct ptx_stmt *s = parse_body_statement(&ps, &depth, false);
        if (!list_push(&ps, &list, s))
            break;
        unparsed |= s->unparsed;
    }
    *out = list_finish(&ps, &list, count);
    ptx_owned_free(list.items);
    /* Blocks may open in one call and close in a later one. */
    return ps.out_of_memory || unparsed ? -1 : 0;
}

/* --- top level ---------------------------------------------------------------- */

/* The parameters between `open` (the '(') and `close` (its ')', or where
 * the text ends). */
static void parse_params(struct parser *ps, struct ptx_function *f, const char *open,
                         const char *close)
{
    struct ptx_str parts[MAX_PARTS];
    struct ptx_str *list = parts;
    size_t max = MAX_PARTS;
    long n = split_commas(ps, open + 1, close, parts, max);
    if (n < 0) { /* a long parameter list: count commas for the real bound */
        max = 1;
        for (const char *q = open; q < close; q++)
            max += *q == ',';
        list = ptx_alloc(ps->m, max * sizeof *list);
        if (list == NULL) {
            ps->out_of_memory = true;
            return;
        }
        n = split_commas(ps, open + 1, close, list, max);
        if (n < 0)
            n = 0;
    }
    f->nparams = (size_t)n;
    f->params = ptx_alloc(ps->m, ((size_t)n + 1) * sizeof *f->params);
    if (f->params == NULL) {
        ps->out_of_memory = true;
        f->nparams = 0;
        return;
    }
    memset(f->params, 0, ((size_t)n + 1) * sizeof *f->params);
    for (long i = 0; i < n; i++) {
        struct ptx_param *p = &f->params[i];
        p->text = list[i];
        read_declarator(list[i].p, list[i].p + list[i].n, &p->name, &p->size, &p->aggregate,
                        &p->floating);
        if (p->name.p == NULL)
            p->name = list[i];
    }
}

static struct ptx_stmt *parse_function(struct parser *ps, const char *start, bool is_entry,
                                       struct stmt_list *scratch)
{
    struct ptx_function f;
    memset(&f, 0, sizeof f);
    f.is_entry = is_entry;
    for (;;) {
        skip_space(ps);
        if (ps->p >= ps->end)
            break;
        char c = *ps->p;
        if (c == '.') {
            struct ptx_str w = read_directive(ps);
            if (w.n <= 1)
                break;
            if (ptx_str_is(w, ".attribute")) {
                skip_space(ps);
                if (ps->p < ps->end && *ps->p == '(')
                    ps->p = skip_balanced(ps->p, ps->end);
            }
        } else if (c == '(') {
            ps->p = skip_balanced(ps->p, ps->end);
        } else if (is_ident_start(c) && c != '%') {
            f.name = read_ident(ps);
            break;
        } else {
            break;
        }
    }
    if (f.name.n == 0) {
        ps->p = start;
        const char *to = through_semicolon(ps, false);
        ps->p = to;
        return verbatim(ps, start, to, true);
    }
    f.head = slice(start, f.name.p + f.name.n);
    skip_space(ps);
    if (ps->p < ps->end && *ps->p == '(') {
        /* The list up to its first ')' (a parameter holds none; counting
         * nested ones would let a stray '(' hide the ')' the printer
         * writes), or to where the text ends inside it. */
        const char *open = ps->p;
        const char *close = find_outside_literals(open, ps->end, ')');
        if (close == NULL)
            close = ps->end = complete_end(open, ps->end, false);
        ps->p = close < ps->end ? close + 1 : close;
        f.has_param_list = true;
        parse_params(ps, &f, open, close);
    }
    const char *tail = ps->p;
    /* Strings as well as comments, as strip_comments sees them; an open one
     * at the end of the text is cut off, as for any statement. */
    while (ps->p < ps->end && *ps->p != '{' && *ps->p != ';') {
        const char *q = skip_literal(ps->p, ps->end);
        if (q == ps->end && q != ps->p && !literal_closed(ps->p, ps->end)) {
            ps->p = ps->end = complete_end(tail, ps->end, false);
            break;
        }
        ps->p = q != ps->p ? q : ps->p + 1;
    }
    f.tail = strip_comments(ps, slice(tail, ps->p));
    struct ptx_stmt *s = new_stmt(ps, PTX_FUNCTION);
    if (s == NULL)
        return NULL;
    if (ps->p < ps->end && *ps->p == '{') {
        ps->p++;
        f.has_body = true;
        parse_body(ps, &f, scratch);
    } else if (ps->p < ps->end) {
        ps->p++; /* the prototype's ';' */
    }
    s->u.func = f;
    return s;
}

static struct ptx_stmt *parse_variable(struct parser *ps, const char *start, enum ptx_space space,
                                       bool external)
{
    const char *decl = ps->p;
    const char *to = through_semicolon(ps, false);
    ps->p = to;
    struct ptx_stmt *s = new_stmt(ps, PTX_VARIABLE);
    if (s == NULL)
        return NULL;
    struct ptx_variable *v = &s->u.var;
    v->text = trim(slice(start, to));
    v->space = space;
    v->external = external;
    read_declarator(decl, to, &v->name, &v->size, NULL, NULL);
    const char *eq = memchr(decl, '=', (size_t)(to - decl));
    v->initialized = eq != NULL;
    if (v->name.p == NULL)
        s->unparsed = true;
    return s;
}

static unsigned arch_of_target(struct ptx_str text)
{
    const char *p = text.p, *end = text.p + text.n;
    for (; p + 3 < end; p++)
        if (p[0] == 's' && p[1] == 'm' && p[2] == '_' && is_digit(p[3])) {
            unsigned arch = 0;
            for (p += 3; p < end && is_digit(*p); p++)
                if ((arch = arch * 10 + (unsigned)(*p - '0')) > 100000)
                    return 0; /* no such target; and no overflow */
            return arch;
        }
    return 0;
}

static struct ptx_stmt *parse_top_statement(struct parser *ps, struct stmt_list *scratch)
{
    const char *start = ps->p;
    ps->stmt_start = start;
    if (*start == ';')
        return empty_statements(ps);
    if (*start != '.') {
        const char *to = through_semicolon(ps, false);
        ps->p = to;
        return verbatim(ps, start, to, true);
    }
    struct ptx_str word = read_directive(ps);
    if (ptx_str_in(word, line_directives)) {
        const char *to = line_end(ps->p, ps->end);
        ps->p = to;
        struct ptx_stmt *s = verbatim(ps, start, to, false);
        if (ptx_str_is(word, ".target"))
            ps->m->target_arch = arch_of_target(slice(start, to));
        return s;
    }
    if (ptx_str_is(word, ".section")) {
        const char *open = memchr(ps->p, '{', (size_t)(ps->end - ps->p));
        const char *close = open ? find_close(open, ps->end) : NULL;
        const char *to = close ? close + 1 : (ps->end = complete_end(start, ps->end, false));
        ps->p = to;
        struct ptx_stmt *s = verbatim(ps, start, to, false);
        return s;
    }
    bool external = false;
    while (ptx_str_in(word, linkage_words)) {
        external |= ptx_str_is(word, ".extern");
        skip_space(ps);
        word = read_directive(ps);
    }
    if (ptx_str_is(word, ".entry") || ptx_str_is(word, ".func"))
        return parse_function(ps, start, ptx_str_is(word, ".entry"), scratch);
    enum ptx_space space = space_of(word);
    if (space != PTX_SPACE_NONE)
        return parse_variable(ps, start, space, external);
    const char *to = through_semicolon(ps, false);
    ps->p = to;
    struct ptx_stmt *s = verbatim(ps, start, to, false);
    return s;
}

int ptx_parse(const char *text, size_t size, struct ptx_module *module)
{
    if (text == NULL) { /* no text: NULL + 0 would be undefined */
        text = "";
        size = 0;
    }
    memset(module, 0, sizeof *module);
    module->source = text;
    module->source_size = size;
    struct parser ps = {module, text, text + size, text, false, NULL};
    struct stmt_list top = {NULL, 0, 0}, body = {NULL, 0, 0};
    for (;;) {
        skip_space(&ps);
        if (ps.p >= ps.end || *ps.p == '\0' || ps.too_deep || ps.out_of_memory)
            break;
        if (!list_push(&ps, &top, parse_top_statement(&ps, &body)))
            break;
    }
    module->top = list_finish(&ps, &top, &module->ntop);
    ptx_owned_free(top.items);
    ptx_owned_free(body.items);
    if (ps.out_of_memory || ps.too_deep) {
        ptx_module_free(module);
        if (ps.out_of_memory) {
            snprintf(module->error, sizeof module->error, "out of memory");
        } else {
            size_t line = 1;
            for (const char *p = text; (p = memchr(p, '\n', (size_t)(ps.too_deep - p))) != NULL;
                 p++)
                line++;
            snprintf(module->error, sizeof module->error,
                     "line %zu: blocks nested deeper than %d", line, PTX_MAX_BLOCK_DEPTH);
        }
        return -1;
    }
    return 0;
}
