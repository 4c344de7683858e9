/* Kernel names for people: C++ names demangled. */
#ifndef MGPU_DEMANGLE_H
#define MGPU_DEMANGLE_H

/* The name demangled where the C++ runtime can, else as given; the caller
 * frees it. NULL only when out of memory. */
char *mgpu_demangle(const char *mangled);

#endif
