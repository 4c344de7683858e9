/* The end-of-run report (MGPU_REPORT=1, mgpu-run --report). */
#ifndef MGPU_REPORT_H
#define MGPU_REPORT_H

/* Prints the report on stderr; call after mgpu_timing_flush_all(). */
void mgpu_report_print(void);

#endif
