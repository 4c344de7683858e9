/* Owns demangling, borrowed from the C++ runtime (libstdc++'s __cxa_demangle)
 * found at run time, so that mgpu itself stays a C library. */
#include "base/demangle.h"

#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

typedef char *(*cxa_demangle_fn)(const char *, char *, size_t *, int *);

char *mgpu_demangle(const char *mangled)
{
    static cxa_demangle_fn demangle;
    if (demangle == NULL) {
        demangle = (cxa_demangle_fn)dlsym(RTLD_DEFAULT, "__cxa_demangle");
        if (demangle == NULL) {
            /* A C program: the C++ runtime is still there to borrow. */
            void *h = dlopen("libstdc++.so.6", RTLD_LAZY | RTLD_LOCAL);
            if (h)
                demangle = (cxa_demangle_fn)dlsym(h, "__cxa_demangle");
        }
    }
    if (demangle != NULL && strncmp(mangled, "_Z", 2) == 0) {
        int status = -1;
        char *d = demangle(mangled, NULL, NULL, &status);
        if (status == 0 && d != NULL)
            return d;
        free(d);
    }
    return strdup(mangled);
}
