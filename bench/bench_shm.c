/* bench_shm.c - figures for pa_shm (not a test): wake-up latency of a
 * reader blocked on its semaphore in another process, ring throughput with
 * 0, 1 and 3 reader processes for 64-byte and 1 MB records, 1 MB copy
 * bandwidth. Prints one line per figure with the target. */
#define _GNU_SOURCE
#include "pa_shm.h"
#include "pa_util.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define BODY 192 /* header rounded up to 64: where a segment's body starts */
#define MAX_READERS 4

static char instance[PA_SHM_INSTANCE_MAX];
static pid_t kids[MAX_READERS];

/* State the children report through an anonymous shared mapping. */
typedef struct shared {
  uint64_t ack;        /* wake-up: seq of the last record the reader handled */
  uint32_t registered; /* readers registered so far */
  uint32_t stop;       /* throughput: writer finished */
  sem_t raw;           /* baseline: bare process-shared semaphore */
  int64_t raw_sent_ns;
  uint64_t raw_idx;
  int64_t spin_ns;     /* reader polls this long before blocking */
  uint64_t seen[MAX_READERS], missed[MAX_READERS];
  int64_t first_ns[MAX_READERS], last_ns[MAX_READERS];
  int64_t lat[]; /* wake-up latencies [ns], one per record */
} shared;

static void cleanup(void) {
  for (int i = 0; i < MAX_READERS; i++)
    if (kids[i] > 0) {
      kill(kids[i], SIGKILL);
      waitpid(kids[i], NULL, 0);
      kids[i] = 0;
    }
  if (instance[0])
    pa_stack_unlink(instance);
}

static void on_signal(int sig) {
  cleanup();
  signal(sig, SIG_DFL);
  raise(sig);
}

static void die(const char *what, const char *err) {
  fprintf(stderr, "bench-shm: %s: %s\n", what, err);
  exit(1);
}

static pa_ring *make_ring(pa_shm_seg *seg, const char *seg_name, uint32_t slots,
                          uint32_t max_record, char *name) {
  char err[256];
  if (pa_shm_name(name, PA_SHM_NAME_MAX, instance, seg_name, err, sizeof err))
    die("name", err);
  pa_shm_unlink(name);
  size_t rb = pa_ring_bytes(slots, max_record, MAX_READERS);
  if (pa_shm_create(seg, name, PA_SEG_TEST, NULL, BODY + rb, 1, err, sizeof err))
    die("create", err);
  pa_ring *r = (pa_ring *)((char *)seg->base + BODY);
  pa_ring_init(r, slots, max_record, MAX_READERS);
  pa_shm_publish(seg);
  /* Touch every slot once: tmpfs pages are allocated on first write. */
  void *tmp = calloc(1, max_record);
  for (uint32_t i = 0; i < slots; i++)
    pa_ring_write(r, tmp, max_record);
  free(tmp);
  return r;
}

static pid_t fork_reader(int idx, void (*fn)(const char *, int, shared *),
                         const char *name, shared *sh) {
  pid_t parent = getpid();
  pid_t pid = fork();
  if (pid < 0)
    die("fork", strerror(errno));
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent)
      _exit(1);
    fn(name, idx, sh);
    _exit(0);
  }
  kids[idx] = pid;
  return pid;
}

static void wait_registered(shared *sh, uint32_t n) {
  while (__atomic_load_n(&sh->registered, __ATOMIC_ACQUIRE) < n)
    usleep(1000);
}

static void reap_all(void) {
  for (int i = 0; i < MAX_READERS; i++)
    if (kids[i] > 0) {
      waitpid(kids[i], NULL, 0);
      kids[i] = 0;
    }
}

static pa_ring *child_attach(pa_shm_seg *seg, const char *name, int *k) {
  char err[256];
  if (pa_shm_attach(seg, name, PA_SEG_TEST, NULL, err, sizeof err)) {
    fprintf(stderr, "bench-shm reader: %s\n", err);
    _exit(2);
  }
  pa_ring *r = (pa_ring *)((char *)seg->base + BODY);
  *k = pa_ring_reader_register(r);
  if (*k < 0)
    _exit(3);
  return r;
}

/* ---- wake-up latency ---------------------------------------------------- */

typedef struct wake_rec {
  int64_t sent_ns; /* writer's pa_now_ns() just before the write */
  uint64_t idx;    /* 0 .. n-1; UINT64_MAX ends the run */
  char pad[48];
} wake_rec;

static void wake_reader(const char *name, int idx, shared *sh) {
  (void)idx;
  pa_shm_seg seg;
  int k;
  pa_ring *r = child_attach(&seg, name, &k);
  pa_ring_cursor c = pa_ring_cursor_now(r);
  __atomic_add_fetch(&sh->registered, 1, __ATOMIC_RELEASE);
  for (;;) {
    /* Optional: poll the head a while before sleeping (spin-then-block). */
    int64_t until = pa_now_ns() + sh->spin_ns;
    while (sh->spin_ns && pa_ring_head(r) < c.next && pa_now_ns() < until)
      ;
    if (pa_ring_head(r) < c.next)
      pa_ring_wait(r, k, 1000000000);
    wake_rec w;
    uint32_t len;
    uint64_t seq;
    while (pa_ring_read_next(r, &c, &w, sizeof w, &len, &seq) == 0) {
      int64_t now = pa_now_ns();
      if (w.idx == UINT64_MAX)
        return;
      sh->lat[w.idx] = now - w.sent_ns;
      __atomic_store_n(&sh->ack, w.idx + 1, __ATOMIC_RELEASE);
    }
  }
}

/* Baseline without pa_shm: a bare sem_post -> sem_wait between processes. */
static void raw_reader(const char *name, int idx, shared *sh) {
  (void)name, (void)idx;
  __atomic_add_fetch(&sh->registered, 1, __ATOMIC_RELEASE);
  for (;;) {
    while (sem_wait(&sh->raw) != 0)
      ;
    int64_t now = pa_now_ns();
    uint64_t i = __atomic_load_n(&sh->raw_idx, __ATOMIC_ACQUIRE);
    if (i == UINT64_MAX)
      return;
    sh->lat[i] = now - sh->raw_sent_ns;
    __atomic_store_n(&sh->ack, i + 1, __ATOMIC_RELEASE);
  }
}

/* mode 0: pa_ring reader blocked on its semaphore; 1: bare semaphore
 * baseline; 2: pa_ring reader that polls spin_us before blocking. */
static void bench_wakeup(long n, long gap_us, int mode, long spin_us) {
  size_t shsz = sizeof(shared) + sizeof(int64_t) * (size_t)n;
  shared *sh = mmap(NULL, shsz, PROT_READ | PROT_WRITE,
                    MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (sh == MAP_FAILED)
    die("mmap", strerror(errno));
  sem_init(&sh->raw, 1, 0);
  sh->spin_ns = mode == 2 ? spin_us * 1000 : 0;
  pa_shm_seg seg;
  char name[PA_SHM_NAME_MAX];
  pa_ring *r = make_ring(&seg, "wake", 64, sizeof(wake_rec), name);
  fork_reader(0, mode == 1 ? raw_reader : wake_reader, name, sh);
  wait_registered(sh, 1);
  wake_rec w;
  memset(&w, 0, sizeof w);
  int64_t t0 = pa_now_ns();
  for (long i = 0; i < n; i++) {
    /* One record at a time, after the reader is back asleep: each is a
     * real wake-up, not a record found while still awake. */
    while (__atomic_load_n(&sh->ack, __ATOMIC_ACQUIRE) < (uint64_t)i)
      ;
    int64_t until = pa_now_ns() + gap_us * 1000;
    while (pa_now_ns() < until)
      ;
    if (mode == 1) {
      sh->raw_sent_ns = pa_now_ns();
      __atomic_store_n(&sh->raw_idx, (uint64_t)i, __ATOMIC_RELEASE);
      sem_post(&sh->raw);
      continue;
    }
    w.idx = (uint64_t)i;
    w.sent_ns = pa_now_ns();
    pa_ring_write(r, &w, sizeof w);
  }
  while (__atomic_load_n(&sh->ack, __ATOMIC_ACQUIRE) < (uint64_t)n)
    ;
  double secs = (double)(pa_now_ns() - t0) / 1e9;
  w.idx = UINT64_MAX;
  __atomic_store_n(&sh->raw_idx, UINT64_MAX, __ATOMIC_RELEASE);
  sem_post(&sh->raw);
  pa_ring_write(r, &w, sizeof w);
  reap_all();
  int64_t p50 = pa_percentile_i64(sh->lat, (size_t)n, 50);
  int64_t p99 = pa_percentile_i64(sh->lat, (size_t)n, 99);
  int64_t p999 = pa_percentile_i64(sh->lat, (size_t)n, 99.9);
  int64_t mx = sh->lat[n - 1];
  static const char *const what[] = {
      "pa_ring reader blocked on its semaphore",
      "baseline: bare sem_post -> sem_wait, no pa_shm",
      "pa_ring reader polling before it blocks"};
  printf("wake-up latency, %s, 64 B, %ld records, gap %ld us%s (%.1f s):\n"
         "  p50 %.1f us  p99 %.1f us  p99.9 %.1f us  max %.1f us%s\n",
         what[mode], n, gap_us, mode == 2 ? ", spin budget" : "", secs,
         p50 / 1e3, p99 / 1e3, p999 / 1e3, mx / 1e3,
         mode == 0 ? "   [target p50 <= 10, p99 <= 50]" : "");
  if (mode == 2)
    printf("  (spin budget %ld us > gap: the reader is awake when the record "
           "lands; it still blocks when no record comes)\n", spin_us);
  fflush(stdout);
  sem_destroy(&sh->raw);
  pa_shm_detach(&seg);
  pa_shm_unlink(name);
  munmap(sh, shsz);
}

/* ---- throughput --------------------------------------------------------- */

static uint32_t tp_len;

static void tp_reader(const char *name, int idx, shared *sh) {
  pa_shm_seg seg;
  int k;
  pa_ring *r = child_attach(&seg, name, &k);
  pa_ring_cursor c = pa_ring_cursor_now(r);
  uint8_t *buf = malloc(tp_len);
  __atomic_add_fetch(&sh->registered, 1, __ATOMIC_RELEASE);
  uint64_t seen = 0;
  for (;;) {
    uint32_t len;
    uint64_t seq;
    bool got = false;
    while (pa_ring_read_next(r, &c, buf, tp_len, &len, &seq) == 0) {
      if (!seen)
        sh->first_ns[idx] = pa_now_ns();
      seen++;
      got = true;
    }
    if (got)
      sh->last_ns[idx] = pa_now_ns();
    if (__atomic_load_n(&sh->stop, __ATOMIC_ACQUIRE) &&
        c.next > pa_ring_head(r))
      break;
    if (!got)
      pa_ring_wait(r, k, 10000000);
  }
  sh->seen[idx] = seen;
  sh->missed[idx] = c.missed;
  free(buf);
}

static void bench_throughput(uint32_t len, uint32_t slots, int readers,
                             long records) {
  shared *sh = mmap(NULL, sizeof(shared), PROT_READ | PROT_WRITE,
                    MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (sh == MAP_FAILED)
    die("mmap", strerror(errno));
  memset(sh, 0, sizeof *sh);
  pa_shm_seg seg;
  char name[PA_SHM_NAME_MAX];
  pa_ring *r = make_ring(&seg, "tp", slots, len, name);
  tp_len = len;
  for (int i = 0; i < readers; i++)
    fork_reader(i, tp_reader, name, sh);
  wait_registered(sh, (uint32_t)readers);
  uint8_t *rec = malloc(len);
  memset(rec, 0x5a, len);
  int64_t t0 = pa_now_ns();
  for (long i = 0; i < records; i++) {
    memcpy(rec, &i, sizeof i);
    pa_ring_write(r, rec, len);
  }
  int64_t dt = pa_now_ns() - t0;
  __atomic_store_n(&sh->stop, 1, __ATOMIC_RELEASE);
  pa_ring_write(r, rec, len); /* wakes readers that sleep */
  reap_all();
  double secs = (double)dt / 1e9;
  double rate = (double)records / secs;
  printf("throughput %7u B records, %d reader%s: writer %8.3f M rec/s "
         "(%6.2f GB/s)",
         len, readers, readers == 1 ? " " : "s", rate / 1e6,
         rate * len / 1e9);
  for (int i = 0; i < readers; i++) {
    uint64_t tot = sh->seen[i] + sh->missed[i];
    double rs = sh->last_ns[i] > sh->first_ns[i]
                    ? (double)(sh->last_ns[i] - sh->first_ns[i]) / 1e9
                    : secs;
    printf("%s r%d read %.3f M/s, missed %.1f%%", i ? ";" : "  |", i,
           (double)sh->seen[i] / rs / 1e6,
           tot ? 100.0 * (double)sh->missed[i] / (double)tot : 0.0);
  }
  printf("\n");
  fflush(stdout);
  free(rec);
  pa_shm_detach(&seg);
  pa_shm_unlink(name);
  munmap(sh, sizeof(shared));
}

/* ---- copy bandwidth ----------------------------------------------------- */

static void bench_copy(long records) {
  const uint32_t len = 1u << 20;
  pa_shm_seg seg;
  char name[PA_SHM_NAME_MAX];
  pa_ring *r = make_ring(&seg, "copy", 8, len, name);
  uint8_t *buf = malloc(len);
  memset(buf, 0x33, len);
  int64_t t0 = pa_now_ns();
  for (long i = 0; i < records; i++)
    pa_ring_write(r, buf, len);
  double wsec = (double)(pa_now_ns() - t0) / 1e9;
  uint32_t got;
  uint64_t seq;
  t0 = pa_now_ns();
  for (long i = 0; i < records; i++)
    pa_ring_read_latest(r, buf, len, &got, &seq);
  double rsec = (double)(pa_now_ns() - t0) / 1e9;
  /* Plain memcpy between two private buffers, for reference. */
  uint8_t *b2 = malloc(len);
  memset(b2, 1, len);
  t0 = pa_now_ns();
  for (long i = 0; i < records; i++) {
    memcpy(b2, buf, len);
    __asm__ __volatile__("" ::"r"(b2) : "memory");
  }
  double msec = (double)(pa_now_ns() - t0) / 1e9;
  double gb = (double)records * len / 1e9;
  printf("copy 1 MB records (%ld): ring write %.2f GB/s, ring read %.2f GB/s, "
         "plain memcpy %.2f GB/s   [target >= 5]\n",
         records, gb / wsec, gb / rsec, gb / msec);
  fflush(stdout);
  free(buf);
  free(b2);
  pa_shm_detach(&seg);
  pa_shm_unlink(name);
}

int main(int argc, char **argv) {
  long wake_records = 100000, gap_us = 30, small_records = 5000000,
       big_records = 2000;
  bool quick = false;
  const pa_opt opts[] = {
      {"wake_records", PA_OPT_INT, &wake_records, 100, 10000000,
       "records in the wake-up latency run"},
      {"gap_us", PA_OPT_INT, &gap_us, 0, 100000,
       "writer pause after the reader's ack, so it is asleep again [us]"},
      {"small_records", PA_OPT_INT, &small_records, 1000, 1000000000,
       "64-byte records per throughput run"},
      {"big_records", PA_OPT_INT, &big_records, 10, 1000000,
       "1 MB records per throughput/copy run"},
      {"quick", PA_OPT_FLAG, &quick, 0, 0, "small runs (smoke check)"},
  };
  char err[256];
  int rc = pa_opt_parse(opts, sizeof opts / sizeof opts[0], argc, argv, NULL,
                        0, NULL, err, sizeof err);
  if (rc == 1) {
    pa_opt_usage(stdout, "bench-shm [flags]", "pa_shm figures", opts,
                 sizeof opts / sizeof opts[0]);
    return 0;
  }
  if (rc < 0) {
    fprintf(stderr, "bench-shm: %s\n", err);
    return PA_EXIT_CONFIG;
  }
  if (quick) {
    wake_records = 2000;
    small_records = 100000;
    big_records = 50;
  }
  snprintf(instance, sizeof instance, "bench%d", (int)getpid());
  atexit(cleanup);
  signal(SIGINT, on_signal);
  signal(SIGTERM, on_signal);
  signal(SIGHUP, on_signal);
  signal(SIGPIPE, on_signal); /* e.g. piped into head: still clean up */

  printf("bench-shm: %ld CPUs online (shared machine: other builds may be "
         "running)\n",
         sysconf(_SC_NPROCESSORS_ONLN));
  bench_wakeup(wake_records, gap_us, 0, 0);
  bench_wakeup(wake_records / 5 > 100 ? wake_records / 5 : 100, gap_us, 1, 0);
  bench_wakeup(wake_records / 5 > 100 ? wake_records / 5 : 100, gap_us, 2,
               gap_us + 50);
  for (int readers = 0; readers <= 3; readers += readers ? 2 : 1)
    bench_throughput(64, 4096, readers, small_records);
  for (int readers = 0; readers <= 3; readers += readers ? 2 : 1)
    bench_throughput(1u << 20, 8, readers, big_records);
  bench_copy(big_records);
  return 0;
}
