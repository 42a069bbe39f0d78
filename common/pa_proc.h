/*
 * pa_proc.h - one reader of /proc/<pid>/stat and /proc/<pid>/status for the
 * launcher's status table, the tests and the benchmarks.
 */
#ifndef PA_PROC_H
#define PA_PROC_H

#include <stdint.h>

typedef struct pa_proc_stat {
  char state; /* 'R', 'S', 'D', 'T' (stopped), 'Z' (zombie), ... */
  int ppid;
  int64_t cpu_ticks; /* utime + stime [clock ticks] */
} pa_proc_stat;

/* Reads /proc/<pid>/stat (pid 0: this process). 0, or -1 when the process
 * is gone or the file cannot be parsed. */
int pa_proc_read_stat(int pid, pa_proc_stat *out);

/* utime + stime of pid [ms], or -1. */
int64_t pa_proc_cpu_ms(int pid);

/* VmRSS of pid (0: this process) [kB], or -1. */
long pa_proc_rss_kb(int pid);

#endif /* PA_PROC_H */
