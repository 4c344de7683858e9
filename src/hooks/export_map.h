/* The shim's exported functions, found by the driver entry point each one
 * stands for. */
#ifndef MGPU_EXPORT_MAP_H
#define MGPU_EXPORT_MAP_H

/* Records that the shim exports `exported` for the driver's `real`. */
void mgpu_export_map_add(void *real, void *exported);

/* The shim's export for the driver's entry point `real`, or NULL. */
void *mgpu_export_map_find(const void *real);

#endif
