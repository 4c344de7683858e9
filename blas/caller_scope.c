/* Owns finding, for a call that reached one of mgpu's interposed BLAS
 * entry points, the routine the dynamic linker would have bound its caller
 * to without mgpu (caller_scope.h). The calling object comes from dladdr
 * on the return address; its scope is searched through a handle of it
 * (dlopen RTLD_NOLOAD: the object and its dependencies, the scope a
 * library loaded RTLD_LOCAL resolves in), then the global scope after this
 * library (RTLD_NEXT). Answers are kept per call site in a table that
 * readers search without a lock. */
#include "blas/caller_scope.h"

#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

struct site_entry {
    const void *site;
    const char *name;
    struct mgpu_scope_definition def;
    atomic_int ready; /* set last: the fields above never change after */
};

#define SITES 1024
static struct site_entry sites[SITES];
static pthread_mutex_t sites_lock = PTHREAD_MUTEX_INITIALIZER;

static size_t slot_of(const void *site, const char *name)
{
    uint64_t h = (uint64_t)(uintptr_t)site * 0x9E3779B97F4A7C15ull ^ (uint64_t)(uintptr_t)name;
    h ^= h >> 29;
    return (size_t)(h % SITES);
}

/* Whether fn lies in the library this file is compiled into. */
static bool in_self(const void *fn)
{
    Dl_info self, other;
    return dladdr((const void *)&in_self, &self) != 0 && dladdr(fn, &other) != 0 &&
           self.dli_fbase == other.dli_fbase;
}

/* The program's own object: its link map's name is empty. */
static bool is_program(const struct link_map *map)
{
    return map == NULL || map->l_name == NULL || map->l_name[0] == '\0';
}

/* name in the global scope after this library; never this library's. */
static void *after_self(const char *name)
{
    void *fn = dlsym(RTLD_NEXT, name);
    return fn != NULL && !in_self(fn) ? fn : NULL;
}

/* A handle of the object that contains fn, kept open, and its path. */
static void *library_of(const void *fn, const char **path)
{
    Dl_info info;
    struct link_map *map = NULL;
    *path = "";
    if (dladdr1(fn, &info, (void **)&map, RTLD_DL_LINKMAP) == 0)
        return NULL;
    if (is_program(map))
        return dlopen(NULL, RTLD_LAZY);
    *path = map->l_name;
    return dlopen(map->l_name, RTLD_LAZY | RTLD_NOLOAD);
}

static void resolve(const void *site, const char *name, struct mgpu_scope_definition *def)
{
    Dl_info info;
    struct link_map *caller = NULL;
    *def = (struct mgpu_scope_definition){.caller_path = "", .library_path = ""};
    if (dladdr1(site, &info, (void **)&caller, RTLD_DL_LINKMAP) != 0 && !is_program(caller) &&
        !in_self(site)) {
        def->caller_path = caller->l_name;
        void *h = dlopen(caller->l_name, RTLD_LAZY | RTLD_NOLOAD);
        if (h != NULL) {
            void *fn = dlsym(h, name);
            if (fn != NULL && !in_self(fn))
                def->fn = fn;
            dlclose(h);
        }
    }
    if (def->fn == NULL)
        def->fn = after_self(name);
    if (def->fn != NULL)
        def->library = library_of(def->fn, &def->library_path);
}

bool mgpu_scope_lookup(const void *site, const char *name, struct mgpu_scope_definition *out)
{
    size_t start = slot_of(site, name);
    for (size_t i = 0; i < SITES; i++) {
        struct site_entry *e = &sites[(start + i) % SITES];
        if (!atomic_load_explicit(&e->ready, memory_order_acquire))
            break;
        if (e->site == site && e->name == name) {
            *out = e->def;
            return false;
        }
    }
    pthread_mutex_lock(&sites_lock);
    bool first = false, done = false;
    for (size_t i = 0; i < SITES && !done; i++) {
        struct site_entry *e = &sites[(start + i) % SITES];
        done = true;
        if (!atomic_load_explicit(&e->ready, memory_order_acquire)) {
            resolve(site, name, out);
            e->site = site;
            e->name = name;
            e->def = *out;
            atomic_store_explicit(&e->ready, 1, memory_order_release);
            first = true;
        } else if (e->site == site && e->name == name) { /* another thread was first */
            *out = e->def;
        } else {
            done = false;
        }
    }
    if (!done) /* the table is full: found each time, said never */
        resolve(site, name, out);
    pthread_mutex_unlock(&sites_lock);
    return first;
}

void *mgpu_scope_symbol(void *library, const char *name)
{
    void *fn = library != NULL ? dlsym(library, name) : NULL;
    if (fn == NULL || in_self(fn))
        fn = after_self(name);
    return fn;
}
