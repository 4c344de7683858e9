/* mgpu's public header. Programs need nothing from it to run under mgpu-run;
 * it lets a program or a tool ask which mgpu, if any, it is running under. */
#ifndef MGPU_H
#define MGPU_H

#ifdef __cplusplus
extern "C" {
#endif

/* The version of the libmgpu in the process, e.g. "0.1.0". A program that
 * wants to work without mgpu too looks this up with dlsym(RTLD_DEFAULT,
 * "mgpu_version") instead of linking libmgpu. */
const char *mgpu_version(void);

#ifdef __cplusplus
}
#endif

#endif
