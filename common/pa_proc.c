/* pa_proc.c - /proc readers (see pa_proc.h). */
#include "pa_proc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void proc_path(char *out, size_t n, int pid, const char *file) {
  if (pid > 0)
    snprintf(out, n, "/proc/%d/%s", pid, file);
  else
    snprintf(out, n, "/proc/self/%s", file);
}

int pa_proc_read_stat(int pid, pa_proc_stat *out) {
  char path[64], buf[1024];
  proc_path(path, sizeof path, pid, "stat");
  FILE *f = fopen(path, "r");
  if (!f)
    return -1;
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = '\0';
  /* comm may hold spaces and parentheses: the fields start after the last
   * ')': state(3) ppid(4) pgrp session tty tpgid flags minflt cminflt majflt
   * cmajflt utime(14) stime(15) */
  const char *p = strrchr(buf, ')');
  if (!p)
    return -1;
  char state = 0;
  int ppid = 0;
  unsigned long long ut = 0, st = 0;
  if (sscanf(p + 1, " %c %d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu",
             &state, &ppid, &ut, &st) != 4)
    return -1;
  out->state = state;
  out->ppid = ppid;
  out->cpu_ticks = (int64_t)(ut + st);
  return 0;
}

int64_t pa_proc_cpu_ms(int pid) {
  pa_proc_stat s;
  if (pa_proc_read_stat(pid, &s) != 0)
    return -1;
  return s.cpu_ticks * 1000 / sysconf(_SC_CLK_TCK);
}

long pa_proc_rss_kb(int pid) {
  char path[64], line[256];
  proc_path(path, sizeof path, pid, "status");
  FILE *f = fopen(path, "r");
  if (!f)
    return -1;
  long kb = -1;
  while (fgets(line, sizeof line, f))
    if (!strncmp(line, "VmRSS:", 6)) {
      kb = strtol(line + 6, NULL, 10);
      break;
    }
  fclose(f);
  return kb;
}
