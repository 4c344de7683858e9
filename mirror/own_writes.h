/* Whether the calling thread is inside a library call of mgpu's own whose
 * writes mgpu knows (its NCCL refreshes and reductions), as against the
 * same library's writes for the program (libnccl's, MGPU_PASSTHROUGH's),
 * which may change anything (mirror/replicas.h's foreign writes). */
#ifndef MGPU_OWN_WRITES_H
#define MGPU_OWN_WRITES_H

#include <stdbool.h>

/* Around mgpu's own call into such a library, on the calling thread;
 * nested calls count. */
void mgpu_own_writes_begin(void);
void mgpu_own_writes_end(void);

bool mgpu_own_writes_active(void);

#endif
