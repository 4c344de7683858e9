/* What went into each cuLink* link of the program, so that a module loaded
 * from the link's output (a cubin, which has no PTX) can be rewritten from
 * the PTX the program linked. */
#ifndef MGPU_LINK_HOOKS_H
#define MGPU_LINK_HOOKS_H

#include <stdbool.h>

/* True when `image` is the output of a link the program completed and has
 * not destroyed. Then *input is its one input to rewrite instead (PTX text
 * or a fatbin), or NULL with a reason in *refused. */
bool mgpu_link_capture_lookup(const void *image, const void **input, const char **refused);

#endif
