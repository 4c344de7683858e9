/* The shim's exported driver functions: their names, and the slot each one
 * jumps through. */
#ifndef MGPU_DRIVER_EXPORTS_H
#define MGPU_DRIVER_EXPORTS_H

extern const unsigned mgpu_export_count;
extern const char *const mgpu_export_names[];
extern void *mgpu_export_slots[] __attribute__((visibility("hidden")));
/* Where each function jumps on a thread inside mgpu_driver_bypass: the
 * driver's own entry point. */
extern void *mgpu_export_driver[] __attribute__((visibility("hidden")));
/* The address of each exported function itself, as dlsym would give it. */
extern void *const mgpu_export_addresses[] __attribute__((visibility("hidden")));

/* Called on the first call through a slot that is not resolved yet. */
__attribute__((visibility("hidden"))) void *mgpu_shim_resolve_slot(unsigned index);

#endif
