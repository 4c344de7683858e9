/* Messages mgpu prints on stderr: one line each, prefixed "mgpu: ". */
#ifndef MGPU_LOG_H
#define MGPU_LOG_H

enum mgpu_log_level { MGPU_LOG_QUIET = 0, MGPU_LOG_INFO = 1, MGPU_LOG_DEBUG = 2 };

void mgpu_log_set_level(int level);
/* Under MPI (MGPU_RANK): every line says "mgpu[rank N]: ". */
void mgpu_log_set_rank(int rank);
int mgpu_log_level(void);

/* Errors and warnings always print; info and debug follow MGPU_VERBOSE. */
void mgpu_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void mgpu_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void mgpu_info(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void mgpu_debug(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
