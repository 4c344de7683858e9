/* Owns scanning PTX text for directives with a small tokenizer that skips
 * comments and strings: the kernels, target and version of a PTX object,
 * cheaply, without the full parser (ptx_parse.c). */
#include "ptx/ptx_text.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

struct scanner {
    const char *p, *end;
};

static bool ident_char(char c)
{
    return isalnum((unsigned char)c) || c == '_' || c == '$' || c == '.' || c == '%';
}

/* The next token: an identifier or directive, or a single other character.
 * Returns its length, 0 at the end. */
static size_t next_token(struct scanner *s, const char **tok)
{
    while (s->p < s->end) {
        char c = *s->p;
        if (isspace((unsigned char)c)) {
            s->p++;
        } else if (c == '/' && s->p + 1 < s->end && s->p[1] == '/') {
            while (s->p < s->end && *s->p != '\n')
                s->p++;
        } else if (c == '/' && s->p + 1 < s->end && s->p[1] == '*') {
            const char *close = NULL;
            for (const char *q = s->p + 2; q + 1 < s->end; q++)
                if (q[0] == '*' && q[1] == '/') {
                    close = q;
                    break;
                }
            s->p = close ? close + 2 : s->end;
        } else if (c == '"') {
            const char *q = s->p + 1;
            while (q < s->end && *q != '"' && *q != '\n')
                q++;
            s->p = q < s->end ? q + 1 : s->end;
        } else {
            break;
        }
    }
    if (s->p >= s->end)
        return 0;
    *tok = s->p;
    if (ident_char(*s->p)) {
        while (s->p < s->end && ident_char(*s->p))
            s->p++;
    } else {
        s->p++;
    }
    return (size_t)(s->p - *tok);
}

static bool token_is(const char *tok, size_t len, const char *word)
{
    return len == strlen(word) && memcmp(tok, word, len) == 0;
}

bool mgpu_ptx_is_text(const char *text, size_t size)
{
    struct scanner s = {text, text + size};
    const char *tok;
    size_t len = next_token(&s, &tok);
    return len > 0 && token_is(tok, len, ".version");
}

long mgpu_ptx_kernels(const char *text, size_t size, void (*fn)(const char *name, void *ctx),
                      void *ctx)
{
    struct scanner s = {text, text + size};
    const char *tok;
    size_t len;
    long count = 0;
    while ((len = next_token(&s, &tok)) > 0) {
        if (!token_is(tok, len, ".entry"))
            continue;
        len = next_token(&s, &tok);
        if (len == 0 || !ident_char(*tok) || len >= 4096)
            break;
        if (fn) {
            char name[4096];
            memcpy(name, tok, len);
            name[len] = '\0';
            fn(name, ctx);
        }
        count++;
    }
    return count;
}

unsigned mgpu_ptx_target_arch(const char *text, size_t size)
{
    struct scanner s = {text, text + size};
    const char *tok;
    size_t len;
    while ((len = next_token(&s, &tok)) > 0) {
        if (!token_is(tok, len, ".target"))
            continue;
        len = next_token(&s, &tok);
        size_t prefix = len > 3 && memcmp(tok, "sm_", 3) == 0        ? 3
                        : len > 8 && memcmp(tok, "compute_", 8) == 0 ? 8
                                                                     : 0;
        /* The digits of the token only: strtoul would read on past the
         * token, and past the text where it ends there. */
        unsigned arch = 0;
        for (size_t i = prefix; prefix && i < len && isdigit((unsigned char)tok[i]); i++)
            if ((arch = arch * 10 + (unsigned)(tok[i] - '0')) > 100000)
                return 0;
        return arch;
    }
    return 0;
}

bool mgpu_ptx_version(const char *text, size_t size, unsigned *major, unsigned *minor)
{
    struct scanner s = {text, text + size};
    const char *tok;
    size_t len;
    while ((len = next_token(&s, &tok)) > 0) {
        if (!token_is(tok, len, ".version"))
            continue;
        /* "9.0" reads as one token: digits and '.' are identifier characters */
        len = next_token(&s, &tok);
        char number[16];
        if (len == 0 || len >= sizeof number)
            return false;
        memcpy(number, tok, len);
        number[len] = '\0';
        char *dot;
        unsigned long a = strtoul(number, &dot, 10);
        if (*dot != '.')
            return false;
        *major = (unsigned)a;
        *minor = (unsigned)strtoul(dot + 1, NULL, 10);
        return true;
    }
    return false;
}
