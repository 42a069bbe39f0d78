/* bench_sim_rss.c - the memory of the real stack with many robots: starts
 * `playarea --no-render --max_robots N --robots N` on the synthetic office
 * (2000x2000 cells of 0.05 m, the map bench-sim measures), lets it run, and
 * prints pa-sim's and pa-netgw's RSS from /proc/PID/status, with each
 * one's anonymous (heap, stacks) and shared-memory (rings, map segment)
 * parts and PSS; then again with a client streaming odom and every scan
 * (pa-netgw then reads the rings and caches each robot's latest scan).
 * Each process's resident memory is split by /proc/PID/smaps: heap, other
 * anonymous, each shared segment (.scan, .state, .ctl, .map) and files.
 * Target: pa-sim + pa-netgw <= 30 MB at 1000 robots.
 *   bench-sim-rss [robots=1000] [seconds=6] [--cells N] [--help] */
#include "pa_map.h"
#include "pa_proc.h"
#include "sim_office.h"
#include "test_launch_util.h"
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char usage[] =
    "usage: bench-sim-rss [robots (default 1000)] [seconds (default 6)]\n"
    "                     [--cells N (office of NxN 0.05 m cells, default "
    "2000)]\n"
    "                     [--help]\n"
    "  Starts playarea --no-render with that many robots on the office, waits\n"
    "  the seconds, prints the RSS of pa-sim and pa-netgw (VmRSS, RssAnon,\n"
    "  RssShmem of /proc/PID/status, Pss of smaps_rollup) and their sums,\n"
    "  and both together with each page they share counted once;\n"
    "  then again after half the seconds with a client streaming odom and\n"
    "  every scan.\n";

/* One "Name:  N kB" field of /proc/pid/<file>, or -1. */
static long proc_kb(pid_t pid, const char *file, const char *field) {
  char path[64], line[256];
  snprintf(path, sizeof path, "/proc/%d/%s", (int)pid, file);
  FILE *f = fopen(path, "r");
  if (!f)
    return -1;
  long v = -1;
  size_t n = strlen(field);
  while (fgets(line, sizeof line, f))
    if (!strncmp(line, field, n) && line[n] == ':') {
      v = strtol(line + n + 1, NULL, 10);
      break;
    }
  fclose(f);
  return v;
}

/* Where a process's resident kB are, from /proc/pid/smaps: the heap,
 * other anonymous memory (thread stacks, large mallocs), each segment of
 * the instance by its name (".scan" ...) and files (binary, libraries). */
enum { PART_HEAP, PART_ANON, PART_FILES, PART_SEGS, PART_MAX = PART_SEGS + 8 };
static void report_parts(const char *name, pid_t pid) {
  char path[64], line[512], seg[PART_MAX][16] = {"heap", "other anon", "files"};
  long kb[PART_MAX] = {0};
  int nseg = PART_SEGS, cur = -1;
  snprintf(path, sizeof path, "/proc/%d/smaps", (int)pid);
  FILE *f = fopen(path, "r");
  if (!f)
    return;
  while (fgets(line, sizeof line, f)) {
    unsigned long lo, hi;
    int off = 0;
    if (sscanf(line, "%lx-%lx %*s %*s %*s %*s %n", &lo, &hi, &off) == 2 &&
        off > 0) {
      char *p = line + off, *nl = strchr(p, '\n');
      if (nl)
        *nl = '\0';
      const char *dot = strrchr(p, '.');
      if (!strcmp(p, "[heap]"))
        cur = PART_HEAP;
      else if (!*p || *p == '[')
        cur = PART_ANON;
      else if (!strncmp(p, "/dev/shm/playarea.", 18) && dot) {
        for (cur = PART_SEGS; cur < nseg && strcmp(seg[cur], dot); cur++)
          ;
        if (cur == nseg && nseg < PART_MAX)
          snprintf(seg[nseg++], sizeof seg[0], "%s", dot);
        else if (cur == nseg)
          cur = PART_FILES;
      } else
        cur = PART_FILES;
    } else if (cur >= 0 && !strncmp(line, "Rss:", 4)) {
      kb[cur] += strtol(line + 4, NULL, 10);
    }
  }
  fclose(f);
  printf("rss   %-8s resident:", name);
  for (int i = 0; i < nseg; i++)
    if (kb[i] >= 50)
      printf(" %s %.1f", seg[i], kb[i] / 1024.0);
  printf(" MB\n");
}

/* Resident kB of pa-sim and pa-netgw together, each page once: the pages
 * private to either (anonymous memory, a library's written data) plus, for
 * each file or segment both map, the larger of the two's shared pages (the
 * same file offsets are the same pages; pa-netgw reads a subset of the
 * rings pa-sim writes, so the larger is their union). The RSS sum counts a
 * ring page both map twice; PSS divides the libraries' pages among every
 * process on the machine that maps them. -1 if smaps cannot be read. */
enum { UNION_NAMES = 256 };
typedef struct union_row {
  char name[200];
  long kb[2]; /* [kB] shared, of pa-sim and of pa-netgw */
} union_row;

static long union_kb(pid_t sim, pid_t gw) {
  static union_row rows[UNION_NAMES];
  int nrows = 0;
  long priv = 0;
  for (int k = 0; k < 2; k++) {
    char path[64], line[512];
    snprintf(path, sizeof path, "/proc/%d/smaps", (int)(k ? gw : sim));
    FILE *f = fopen(path, "r");
    if (!f)
      return -1;
    int cur = -1; /* row of the mapping's file, -1: anonymous */
    while (fgets(line, sizeof line, f)) {
      unsigned long lo, hi;
      int off = 0;
      long v;
      if (sscanf(line, "%lx-%lx %*s %*s %*s %*s %n", &lo, &hi, &off) == 2 &&
          off > 0) {
        char *p = line + off, *nl = strchr(p, '\n');
        if (nl)
          *nl = '\0';
        cur = -1;
        if (*p != '/')
          continue;
        for (cur = 0; cur < nrows && strcmp(rows[cur].name, p); cur++)
          ;
        if (cur == nrows && nrows < UNION_NAMES) {
          snprintf(rows[nrows].name, sizeof rows[0].name, "%s", p);
          rows[nrows].kb[0] = rows[nrows].kb[1] = 0;
          nrows++;
        } else if (cur == nrows) {
          cur = -1; /* table full: counted as private, an upper bound */
        }
      } else if (sscanf(line, "Private_Clean: %ld", &v) == 1 ||
                 sscanf(line, "Private_Dirty: %ld", &v) == 1) {
        priv += v;
      } else if (sscanf(line, "Shared_Clean: %ld", &v) == 1 ||
                 sscanf(line, "Shared_Dirty: %ld", &v) == 1) {
        if (cur >= 0)
          rows[cur].kb[k] += v;
        else
          priv += v;
      }
    }
    fclose(f);
  }
  for (int i = 0; i < nrows; i++)
    priv += rows[i].kb[0] > rows[i].kb[1] ? rows[i].kb[0] : rows[i].kb[1];
  return priv;
}

/* Prints a process's RSS and its parts; its PSS (shared pages divided
 * among the processes mapping them) into *pss. */
static long report(const char *name, pid_t pid, long *pss) {
  long rss = pa_proc_rss_kb(pid);
  *pss = proc_kb(pid, "smaps_rollup", "Pss");
  printf("rss   %-8s pid %-7d RSS %7.1f MB (anonymous %.1f MB, files %.1f MB, "
         "shared memory %.1f MB), PSS %.1f MB\n",
         name, (int)pid, rss / 1024.0,
         proc_kb(pid, "status", "RssAnon") / 1024.0,
         proc_kb(pid, "status", "RssFile") / 1024.0,
         proc_kb(pid, "status", "RssShmem") / 1024.0, *pss / 1024.0);
  report_parts(name, pid);
  return rss;
}

int main(int argc, char **argv) {
  long robots = 1000, cells = 2000;
  double seconds = 6;
  int pos = 0;
  for (int i = 1; i < argc; i++) {
    char *end;
    if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
      fputs(usage, stdout);
      return 0;
    } else if (!strcmp(argv[i], "--cells") && i + 1 < argc) {
      cells = strtol(argv[++i], &end, 10);
      if (*end || cells < 64 || cells > 20000) {
        fprintf(stderr, "bench-sim-rss: --cells must be in [64, 20000]\n");
        return 2;
      }
    } else if (pos == 0 && (robots = strtol(argv[i], &end, 10), !*end) &&
               robots >= 1 && robots <= 65536) {
      pos++;
    } else if (pos == 1 && (seconds = strtod(argv[i], &end), !*end) &&
               seconds > 0 && seconds <= 3600) {
      pos++;
    } else {
      fprintf(stderr, "bench-sim-rss: bad argument %s\n%s", argv[i], usage);
      return 2;
    }
  }
  /* playarea and its children next to this binary unless PA_BIN_DIR says */
  char self[512];
  ssize_t sl = readlink("/proc/self/exe", self, sizeof self - 1);
  if (sl > 0 && !getenv("PA_BIN_DIR")) {
    self[sl] = '\0';
    char *slash = strrchr(self, '/');
    if (slash) {
      *slash = '\0';
      setenv("PA_BIN_DIR", self, 1);
    }
  }
  pa_grid g;
  ts_office(&g, (uint32_t)cells, (uint32_t)cells);
  if (!g.cells) {
    fprintf(stderr, "bench-sim-rss: out of memory for the office\n");
    return 1;
  }
  /* the first robot starts at (0, 0): the origin puts a free spot there */
  uint32_t fx = 0, fy = 0;
  for (uint32_t q = 0; q < g.width * g.height && !fx; q++) {
    uint32_t cx = 24 + q % (g.width - 48), cy = 24 + q / (g.width - 48);
    if (cy >= g.height - 24)
      break;
    bool free_sq = true;
    for (int dy = -12; dy <= 12 && free_sq; dy++)
      for (int dx = -12; dx <= 12 && free_sq; dx++)
        free_sq = g.cells[(size_t)(cy + dy) * g.width + cx + dx] == 0;
    if (free_sq)
      fx = cx, fy = cy;
  }
  g.origin_x = -((double)fx + 0.5) * g.resolution;
  g.origin_y = -((double)fy + 0.5) * g.resolution;
  char yaml[600], png[600], err[256];
  snprintf(yaml, sizeof yaml, "%s/rss-office.yaml", pa_test_tmpdir());
  snprintf(png, sizeof png, "%s/rss-office.png", pa_test_tmpdir());
  int rc = pa_map_save(&g, yaml, png, err, sizeof err);
  pa_grid_free(&g);
  if (rc != 0) {
    fprintf(stderr, "bench-sim-rss: %s\n", err);
    return 1;
  }
  char nr[16];
  snprintf(nr, sizeof nr, "%ld", robots);
  const char *extra[] = {"--no-render", "--max_robots", nr,  "--robots", nr,
                         "--map_yaml",  yaml,           NULL};
  lt_stack t;
  memset(&t, 0, sizeof t);
  int status = 1;
  if (lt_start(&t, "rss", extra, 60000) == 0) {
    usleep((useconds_t)(seconds * 1e6));
    pid_t sim = lt_pid(&t, PA_PROC_SIM), gw = lt_pid(&t, PA_PROC_NETGW);
    printf("rss   %ld robots on a %ldx%ld-cell office, after %.0f s "
           "(playarea --no-render --max_robots %ld --robots %ld)\n",
           robots, cells, cells, seconds, robots, robots);
    long pa, pb;
    long a = report("pa-sim", sim, &pa), b = report("pa-netgw", gw, &pb);
    if (a > 0 && b > 0) {
      printf("rss   pa-sim + pa-netgw RSS %.1f MB, PSS %.1f MB, each page "
             "once %.1f MB, no client (target <= 30 MB at 1000 robots)\n",
             (a + b) / 1024.0, (pa + pb) / 1024.0, union_kb(sim, gw) / 1024.0);
      status = 0;
    }
    /* A client streaming odom and every robot's scans: pa-netgw then keeps
     * each robot's latest scan. */
    lt_odom o = {-1, -1, 0};
    char line[64];
    if (status == 0 && lt_odom_open(&o, t.port, NULL) == 0) {
      snprintf(line, sizeof line, "sub scan %u\n", (unsigned)o.udp_port);
      if (write(o.tcp, line, strlen(line)) != (ssize_t)strlen(line))
        status = 1;
      int64_t end = pa_test_now_ms() + (int64_t)(seconds * 500);
      lt_odom_frame f;
      while (pa_test_now_ms() < end)
        lt_odom_drain(&o, &f), usleep(2000);
      printf("rss   with a client streaming odom and all scans for %.0f s:\n",
             seconds / 2);
      a = report("pa-sim", sim, &pa);
      b = report("pa-netgw", gw, &pb);
      if (a > 0 && b > 0)
        printf("rss   pa-sim + pa-netgw RSS %.1f MB (pages both map counted "
               "twice), PSS %.1f MB, each page once %.1f MB, streaming\n",
               (a + b) / 1024.0, (pa + pb) / 1024.0,
               union_kb(sim, gw) / 1024.0);
      else
        status = 1;
    }
    lt_odom_close(&o);
  }
  lt_stop(&t, 10000);
  unlink(yaml);
  unlink(png);
  return status;
}
