/* The driver entry points handed to libraries whose calls bypass mgpu's
 * hooks (libnccl, MGPU_PASSTHROUGH): the driver's own, except that those
 * that may write device memory are wrapped to tell the replicas first
 * (foreign_writes.c). */
#ifndef MGPU_FOREIGN_WRITES_H
#define MGPU_FOREIGN_WRITES_H

/* What to hand such a library for the driver's function `real`: `real`
 * itself, or, with mirrors on, its wrapper. */
void *mgpu_foreign_entry(void *real);

#endif
