/* Finding the routine a caller would have reached without mgpu. The
 * interposed BLAS entry points (libmgpu-blas.so, libmgpu-hostblas.so) are
 * preloaded, so the dynamic linker binds every caller's reference to them,
 * also a library's that Python (or any program) loaded RTLD_LOCAL with its
 * cuBLAS or CPU BLAS in that library's own scope, where dlsym(RTLD_NEXT)
 * does not look. This looks where the linker would have: the calling
 * object's own scope first, then the global scope after mgpu's library,
 * never mgpu's own definitions. Compiled into each interposer library. */
#ifndef MGPU_CALLER_SCOPE_H
#define MGPU_CALLER_SCOPE_H

#include <stdbool.h>

/* Where a call's routine was found. */
struct mgpu_scope_definition {
    void *fn;                 /* the routine; NULL when none exists outside mgpu */
    void *library;            /* a dlopen handle of the library that defines fn (kept open) */
    const char *library_path; /* its path, for messages ("" for the program itself) */
    const char *caller_path;  /* the calling object's path, for messages */
};

/* The definition of routine `name` (a string of static storage, compared
 * by address in the cache) that the object containing `site` (a return
 * address) would have been bound to without mgpu. Cached per call site;
 * returns whether it was found now for the first time at this site, so
 * that the caller can say so once. */
bool mgpu_scope_lookup(const void *site, const char *name, struct mgpu_scope_definition *out);

/* The definition of `name` in `library` (a handle from a definition
 * above): that library's own, or one in its dependencies. */
void *mgpu_scope_symbol(void *library, const char *name);

#endif
