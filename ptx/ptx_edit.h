/* What the rewriting passes share for editing a parsed module: building a
 * new function body, copying an instruction to change it, finding and
 * replacing names in operands, a set of names, and adding declarations. */
#ifndef MGPU_PTX_EDIT_H
#define MGPU_PTX_EDIT_H

#include "ptx/ptx_module.h"

/* A function body being rebuilt statement by statement. */
struct ptx_body_builder {
    struct ptx_module *module;
    struct ptx_stmt **items;
    size_t count, cap;
    bool failed;
};

void ptx_builder_init(struct ptx_body_builder *b, struct ptx_module *module);
void ptx_builder_add(struct ptx_body_builder *b, struct ptx_stmt *stmt);
/* Parses PTX statements (text owned by the module's arena) and adds them. */
void ptx_builder_add_text(struct ptx_body_builder *b, const char *text);
/* Makes the built statements f's body. Returns 0, or -1 if anything failed
 * (the body is then unchanged). Frees the builder's scratch either way. */
int ptx_builder_finish(struct ptx_body_builder *b, struct ptx_function *f);

/* A copy of an instruction statement whose modifier and operand arrays may
 * be changed. NULL when memory runs out. */
struct ptx_stmt *ptx_copy_instruction(struct ptx_module *module, const struct ptx_stmt *s);
/* Inserts a modifier at position `at` of a copied instruction. */
int ptx_insert_mod(struct ptx_module *module, struct ptx_instruction *ins, uint32_t at,
                   const char *mod);

/* Whether `text` holds `token` as a whole word ("%ctaid.x" is not in
 * "%ctaid.xy", "buf" is not in "buf2"). */
bool ptx_has_token(struct ptx_str text, const char *token);
/* text with every whole-word `token` replaced. */
struct ptx_str ptx_replace_token(struct ptx_module *module, struct ptx_str text,
                                 struct ptx_str token, const char *replacement);

/* Calls fn for every name (identifier, register or symbol, not a number or
 * a modifier) in an operand. */
void ptx_for_each_name(struct ptx_str operand, void (*fn)(struct ptx_str name, void *ctx),
                       void *ctx);

/* A set of names, each with an index. */
struct ptx_name_set {
    struct ptx_str *names;
    size_t *slots; /* index + 1 per hash slot, 0 when empty */
    size_t count, nslots;
};
/* Adds a name; returns its index, or -1 when memory runs out. */
long ptx_name_set_add(struct ptx_name_set *set, struct ptx_str name);
/* The index of a name, or -1. */
long ptx_name_set_find(const struct ptx_name_set *set, struct ptx_str name);
void ptx_name_set_free(struct ptx_name_set *set);

/* Whether s is a directive (in a body) that starts with one of `words`
 * (NULL-terminated: ".reg", ".loc", ...). */
bool ptx_directive_is(const struct ptx_stmt *s, const char *const *words);

/* Instruction s, or a copy of it in which each operand that is one of
 * `labels` has `suffix` appended (for a body copied where its labels
 * would clash); NULL when memory runs out. */
struct ptx_stmt *ptx_rename_label_operands(struct ptx_module *module, struct ptx_stmt *s,
                                           const struct ptx_name_set *labels, const char *suffix);

/* Adds top-level variable declarations (text owned by the arena) before
 * the module's first function, where every function can see them. */
int ptx_add_declaration(struct ptx_module *module, const char *text);

#endif
