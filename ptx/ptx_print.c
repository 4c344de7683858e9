/* Owns printing a ptx_module back to PTX text: one statement per line,
 * instructions re-assembled from their parts, everything else as it was
 * read. Comments are not kept; nothing else is lost. */
#include "ptx/ptx_module.h"

#include <stdlib.h>
#include <string.h>

struct out {
    char *buf;
    size_t len, cap;
    bool failed;
    size_t line; /* of the output, from 0 */
    /* The module's source, and how far its lines have been counted. */
    const char *source, *source_end, *cursor;
    size_t source_line;
};

static void put(struct out *o, const char *s, size_t n)
{
    if (o->failed)
        return;
    if (o->len + n + 1 > o->cap) {
        size_t cap = o->cap ? o->cap : 4096;
        while (o->len + n + 1 > cap)
            cap *= 2;
        char *grown = realloc(o->buf, cap);
        if (grown == NULL) {
            o->failed = true;
            return;
        }
        o->buf = grown;
        o->cap = cap;
    }
    memcpy(o->buf + o->len, s, n);
    o->len += n;
    for (const char *nl = s; (nl = memchr(nl, '\n', (size_t)(s + n - nl))) != NULL; nl++)
        o->line++;
}

/* Blank lines until the output is on the source line of `pos`. */
static void align_to_source(struct out *o, const char *pos)
{
    if (pos == NULL || pos < o->cursor || pos >= o->source_end)
        return;
    for (const char *nl = o->cursor; (nl = memchr(nl, '\n', (size_t)(pos - nl))) != NULL; nl++)
        o->source_line++;
    o->cursor = pos;
    static const char blank[] = "\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n";
    while (o->line < o->source_line) {
        size_t gap = o->source_line - o->line;
        put(o, blank, gap < sizeof blank - 1 ? gap : sizeof blank - 1);
        if (o->failed)
            return;
    }
}

static void put_str(struct out *o, struct ptx_str s)
{
    put(o, s.p, s.n);
}

static void put_c(struct out *o, const char *s)
{
    put(o, s, strlen(s));
}

static void print_instruction(struct out *o, const struct ptx_instruction *ins)
{
    put_c(o, "\t");
    if (ins->guard.n) {
        put_c(o, "@");
        put_str(o, ins->guard);
        put_c(o, " ");
    }
    put_str(o, ins->opcode);
    for (uint32_t i = 0; i < ins->nmods; i++) {
        put_c(o, ".");
        put_str(o, ins->mods[i]);
    }
    for (uint32_t i = 0; i < ins->nops; i++) {
        put_c(o, i ? ", " : " \t");
        put_str(o, ins->ops[i]);
    }
    put_c(o, ";\n");
}

static void print_statement(struct out *o, const struct ptx_stmt *s)
{
    align_to_source(o, s->pos);
    switch (s->kind) {
    case PTX_INSTRUCTION:
        print_instruction(o, &s->u.ins);
        break;
    case PTX_LABEL:
        put_str(o, s->u.text);
        put_c(o, ":\n");
        break;
    case PTX_DIRECTIVE:
        put_c(o, "\t");
        put_str(o, s->u.text);
        put_c(o, "\n");
        break;
    case PTX_BLOCK_OPEN:
        put_c(o, "{\n");
        break;
    case PTX_BLOCK_CLOSE:
        put_c(o, "}\n");
        break;
    case PTX_VERBATIM:
        put_str(o, s->u.text);
        put_c(o, "\n");
        break;
    case PTX_VARIABLE:
        put_str(o, s->u.var.text);
        put_c(o, "\n");
        break;
    case PTX_FUNCTION: {
        const struct ptx_function *f = &s->u.func;
        put_str(o, f->head);
        if (f->has_param_list || f->nparams) {
            put_c(o, "(");
            for (size_t i = 0; i < f->nparams; i++) {
                put_c(o, i ? ",\n\t" : "\n\t");
                put_str(o, f->params[i].text);
            }
            put_c(o, f->nparams ? "\n)" : ")");
        }
        if (f->tail.n) {
            put_c(o, "\n");
            put_str(o, f->tail);
        }
        if (!f->has_body) {
            put_c(o, ";\n");
            break;
        }
        put_c(o, "\n{\n");
        for (size_t i = 0; i < f->nbody; i++)
            print_statement(o, f->body[i]);
        put_c(o, "}\n");
        break;
    }
    }
}

char *ptx_print(const struct ptx_module *module, size_t *length)
{
    struct out o = {
        NULL,           0, 0, false, 0, module->source, module->source + module->source_size,
        module->source, 0};
    for (size_t i = 0; i < module->ntop; i++)
        print_statement(&o, module->top[i]);
    put(&o, "", 0);
    if (o.failed || o.buf == NULL) {
        free(o.buf);
        return NULL;
    }
    o.buf[o.len] = '\0';
    if (length)
        *length = o.len;
    return o.buf;
}
