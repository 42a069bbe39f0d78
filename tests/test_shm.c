/* test_shm.c - pa_shm in one process (plus short-lived forks where a dead
 * pid is needed): segments, ring, queue, stack, map, world seqlock,
 * pa-shmctl. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "pa_shm.h"
#include "testutil.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <semaphore.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#define BODY 192 /* header rounded up to 64: where bodies start */

static int shmctl(char *out, size_t n, const char *a1, const char *a2);

/* A raw segment name under a tracked test instance (cleaned up at exit). */
static void raw_name(char *out, size_t n, const char *tag, const char *seg) {
  char inst[PA_SHM_INSTANCE_MAX];
  pa_test_instance(inst, sizeof inst, tag);
  assert_int_equal(pa_shm_name(out, n, inst, seg, NULL, 0), 0);
}

/* 64-byte aligned scratch memory for rings and queues. */
static void *amem(size_t n) {
  void *p = NULL;
  assert_int_equal(posix_memalign(&p, 64, n), 0);
  memset(p, 0, n);
  return p;
}

/* An initialised private ring (free it). */
static pa_ring *new_ring(uint32_t slots, uint32_t max_record,
                         uint32_t readers) {
  pa_ring *r = amem(pa_ring_bytes(slots, max_record, readers));
  assert_int_equal(pa_ring_init(r, slots, max_record, readers), 0);
  return r;
}

static pa_stack_def small_def(const char *inst) {
  pa_stack_def d = pa_test_small_def(inst, 360, 64, 48, 16);
  d.max_readers = 4;
  return d;
}

/* Creates a small instance named for tag (its name into inst) as s. */
static void create_small(pa_stack *s, char inst[PA_SHM_INSTANCE_MAX],
                         const char *tag) {
  char err[256];
  pa_test_instance(inst, PA_SHM_INSTANCE_MAX, tag);
  pa_stack_def d = small_def(inst);
  assert_int_equal(pa_stack_create(s, &d, err, sizeof err), 0);
}

/* Detaches the attacher a and the creator s, then unlinks inst. */
static void detach_unlink(pa_stack *s, pa_stack *a, const char *inst) {
  pa_stack_detach(a);
  pa_stack_detach(s);
  pa_stack_unlink(inst);
}

/* ---- names and segments ------------------------------------------------- */

static void test_names(void **st) {
  (void)st;
  char out[PA_SHM_NAME_MAX], err[200];
  assert_int_equal(pa_shm_name(out, sizeof out, "p9000", "ctl", err, sizeof err), 0);
  assert_string_equal(out, "/playarea.p9000.ctl");
  assert_int_equal(pa_shm_name(out, sizeof out, "A_b-9", "state", err, sizeof err), 0);
  const char *bad[] = {"", "a.b", "a/b", "a b", "ä", "../x",
                       "012345678901234567890123456789012345678901234567"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    err[0] = 0;
    assert_int_equal(pa_shm_name(out, sizeof out, bad[i], "ctl", err, sizeof err),
                     PA_SHM_EINVAL);
    assert_non_null(strstr(err, "bad instance name"));
  }
  /* 47 characters is the longest accepted. */
  char inst[48];
  memset(inst, 'x', 47);
  inst[47] = 0;
  assert_int_equal(pa_shm_name(out, sizeof out, inst, "camera", err, sizeof err), 0);
  assert_int_equal(pa_shm_name(out, sizeof out, NULL, "ctl", err, sizeof err),
                   PA_SHM_EINVAL);
  char p[32];
  pa_stack_instance_for_port(p, sizeof p, 9000);
  assert_string_equal(p, "p9000");
  assert_string_equal(pa_shm_strerror(PA_SHM_EFULL), "full");
  assert_true(pa_shm_new_boot_id() != 0);
  assert_true(pa_now_ns() > 0);
}

static void test_segment_validation(void **st) {
  (void)st;
  char name[PA_SHM_NAME_MAX], err[256];
  raw_name(name, sizeof name, "seg", "test");
  uint64_t sizes[PA_SHM_MAX_SIZES] = {1, 2, 3, 4, 5, 6, 7, 8};
  pa_shm_seg seg, a;
  assert_int_equal(pa_shm_create(&seg, name, PA_SEG_TEST, sizes, 4096, 42, err, sizeof err), 0);
  pa_shm_header *h = seg.base;
  assert_int_equal(h->owner_pid, getpid());
  assert_int_equal(h->ready, 0);

  /* Not published: attach waits briefly, then says "not ready". */
  assert_int_equal(pa_shm_attach(&a, name, PA_SEG_TEST, sizes, err, sizeof err),
                   PA_SHM_ENOTREADY);
  assert_non_null(strstr(err, "not ready"));
  pa_shm_publish(&seg);
  assert_int_equal(pa_shm_attach(&a, name, PA_SEG_TEST, sizes, err, sizeof err), 0);
  assert_int_equal(a.size, 4096);
  assert_int_equal(((pa_shm_header *)a.base)->boot_id, 42);
  pa_shm_detach(&a);
  assert_null(a.base);

  /* Second create: EEXIST. */
  pa_shm_seg dup;
  assert_int_equal(pa_shm_create(&dup, name, PA_SEG_TEST, sizes, 4096, 1, err, sizeof err),
                   PA_SHM_EEXIST);

  /* Each mismatch names the field, the segment, found and expected. */
  assert_int_equal(pa_shm_attach(&a, name, PA_SEG_CTL, NULL, err, sizeof err),
                   PA_SHM_EMISMATCH);
  assert_non_null(strstr(err, "kind is 99 (test), expected 1 (ctl)"));
  assert_non_null(strstr(err, name));
  uint64_t wrong[PA_SHM_MAX_SIZES] = {1, 2, 3, 4, 5, 66, 7, 8};
  assert_int_equal(pa_shm_attach(&a, name, PA_SEG_TEST, wrong, err, sizeof err),
                   PA_SHM_EMISMATCH);
  assert_non_null(strstr(err, "sizes[5] is 6, expected 66"));
  uint64_t any[PA_SHM_MAX_SIZES];
  for (int i = 0; i < PA_SHM_MAX_SIZES; i++)
    any[i] = PA_SHM_SIZE_ANY;
  any[0] = 1;
  assert_int_equal(pa_shm_attach(&a, name, PA_SEG_TEST, any, err, sizeof err), 0);
  pa_shm_detach(&a);

  h->version = 1; /* a peer built before typed pa_cmd/pa_reply */
  assert_int_equal(pa_shm_attach(&a, name, PA_SEG_TEST, NULL, err, sizeof err),
                   PA_SHM_EMISMATCH);
  char want[64];
  snprintf(want, sizeof want, "layout version is 1, expected %u",
           PA_SHM_LAYOUT_VERSION);
  assert_non_null(strstr(err, want));
  h->version = PA_SHM_LAYOUT_VERSION;
  h->total_size = 8192;
  assert_int_equal(pa_shm_attach(&a, name, PA_SEG_TEST, NULL, err, sizeof err),
                   PA_SHM_EMISMATCH);
  assert_non_null(strstr(err, "total size is 8192"));
  h->total_size = 4096;
  h->magic = 0x12345678;
  assert_int_equal(pa_shm_attach(&a, name, PA_SEG_TEST, NULL, err, sizeof err),
                   PA_SHM_EMISMATCH);
  assert_non_null(strstr(err, "magic"));
  h->magic = PA_SHM_MAGIC;

  assert_int_equal(pa_shm_unlink(name), 0);
  assert_int_equal(pa_shm_unlink(name), 0); /* ENOENT is fine */
  assert_int_equal(pa_shm_attach(&a, name, PA_SEG_TEST, NULL, err, sizeof err),
                   PA_SHM_ENOENT);
  assert_non_null(strstr(err, "does not exist"));
  pa_shm_detach(&seg);

  /* Bad create arguments. */
  assert_int_equal(pa_shm_create(&seg, "noslash", PA_SEG_TEST, NULL, 4096, 1, err, sizeof err),
                   PA_SHM_EINVAL);
  assert_int_equal(pa_shm_create(&seg, name, PA_SEG_TEST, NULL, 10, 1, err, sizeof err),
                   PA_SHM_EINVAL);
  assert_non_null(strstr(err, "smaller than the header"));
}

/* ---- ring, single process ------------------------------------------------ */

static void test_ring_bad_sizes(void **st) {
  (void)st;
  void *m = amem(1 << 16);
  assert_int_equal(pa_ring_bytes(0, 64, 1), 0);
  assert_int_equal(pa_ring_bytes(1, 64, 1), 0);
  assert_int_equal(pa_ring_bytes(4, 0, 1), 0);
  assert_int_equal(pa_ring_bytes(4, 64, 1000), 0);
  assert_int_equal(pa_ring_bytes(4, 0x20000000u, 1), 0);
  assert_int_equal(pa_ring_init(m, 1, 64, 1), PA_SHM_EINVAL);
  assert_int_equal(pa_ring_init(m, 4, 0, 1), PA_SHM_EINVAL);
  assert_int_equal(pa_ring_init((char *)m + 8, 4, 64, 1), PA_SHM_EINVAL);
  assert_int_equal(pa_ring_init(NULL, 4, 64, 1), PA_SHM_EINVAL);
  size_t need = pa_ring_bytes(4, 64, 1);
  assert_true(need > 0 && need % 64 == 0);
  assert_int_equal(pa_ring_init(m, 4, 64, 1), 0);
  char err[200];
  assert_int_equal(pa_ring_check(m, need, err, sizeof err), 0);
  assert_int_equal(pa_ring_check(m, need - 64, err, sizeof err), PA_SHM_EMISMATCH);
  assert_non_null(strstr(err, "needs"));
  memset(m, 0, 64);
  assert_int_equal(pa_ring_check(m, need, err, sizeof err), PA_SHM_EMISMATCH);
  assert_non_null(strstr(err, "magic"));
  free(m);
}

static void test_ring_wrap_and_lap(void **st) {
  (void)st;
  const uint32_t slots = 4, maxr = 100;
  pa_ring *r = new_ring(slots, maxr, 2);
  assert_int_equal(pa_ring_slot_count(r), slots);
  assert_int_equal(pa_ring_max_record(r), maxr);
  uint8_t in[100], out[100];
  uint32_t len;
  uint64_t seq;
  pa_ring_cursor c = pa_ring_cursor_now(r);
  assert_int_equal(c.next, 1);
  assert_int_equal(pa_ring_read_next(r, &c, out, sizeof out, &len, &seq), PA_SHM_EMPTY);
  assert_int_equal(pa_ring_read_latest(r, out, sizeof out, &len, &seq), PA_SHM_EMPTY);

  /* In step: every record, in order, over several wrap-arounds. */
  for (uint64_t n = 1; n <= 37; n++) {
    uint32_t l = (uint32_t)(n * 7 % (maxr + 1));
    pa_test_fill(in, l, n);
    assert_int_equal(pa_ring_write(r, in, l), (int64_t)n);
    assert_int_equal(pa_ring_read_next(r, &c, out, sizeof out, &len, &seq), 0);
    assert_int_equal(seq, n);
    assert_int_equal(len, l);
    assert_true(pa_test_check(out, len, n));
  }
  assert_int_equal(c.missed, 0);
  assert_int_equal(pa_ring_head(r), 37);

  /* Lapped: 10 records into 4 slots; the cursor learns it missed 6. */
  for (uint64_t n = 38; n <= 47; n++) {
    pa_test_fill(in, 50, n);
    pa_ring_write(r, in, 50);
  }
  uint64_t expect = 44;
  while (pa_ring_read_next(r, &c, out, sizeof out, &len, &seq) == 0) {
    assert_int_equal(seq, expect);
    assert_true(pa_test_check(out, len, seq));
    expect++;
  }
  assert_int_equal(expect, 48);
  assert_int_equal(c.missed, 6);
  assert_int_equal(c.next, 48);

  /* A zeroed cursor starts at the oldest readable record. */
  pa_ring_cursor z = {0, 0};
  assert_int_equal(pa_ring_read_next(r, &z, out, sizeof out, &len, &seq), 0);
  assert_int_equal(seq, 44);
  assert_int_equal(z.missed, 43);

  /* cursor_now sees only what comes later. */
  pa_ring_cursor now = pa_ring_cursor_now(r);
  assert_int_equal(pa_ring_read_next(r, &now, out, sizeof out, &len, &seq), PA_SHM_EMPTY);
  pa_ring_write(r, in, 1);
  assert_int_equal(pa_ring_read_next(r, &now, out, sizeof out, &len, &seq), 0);
  assert_int_equal(seq, 48);

  assert_int_equal(pa_ring_read_latest(r, out, sizeof out, &len, &seq), 0);
  assert_int_equal(seq, 48);
  assert_int_equal(len, 1);
  free(r);
}

static void test_ring_sizes(void **st) {
  (void)st;
  const uint32_t maxr = 1000;
  pa_ring *r = new_ring(3, maxr, 1);
  uint8_t in[1001], out[1001];
  uint32_t len = 0;
  uint64_t seq = 0;
  pa_test_fill(in, maxr, 1);
  assert_int_equal(pa_ring_write(r, in, maxr), 1); /* max size fits */
  assert_int_equal(pa_ring_write(r, in, maxr + 1), PA_SHM_EINVAL);
  assert_int_equal(pa_ring_write(r, NULL, 5), PA_SHM_EINVAL);
  assert_null(pa_ring_write_begin(r, maxr + 1));
  assert_int_equal(pa_ring_head(r), 1);
  assert_int_equal(pa_ring_write(r, NULL, 0), 2); /* empty record is fine */

  pa_ring_cursor c = {1, 0};
  /* Too small a buffer: ETOOBIG, the length needed, the cursor stays. */
  assert_int_equal(pa_ring_read_next(r, &c, out, 10, &len, &seq), PA_SHM_ETOOBIG);
  assert_int_equal(len, maxr);
  assert_int_equal(c.next, 1);
  assert_int_equal(pa_ring_read_latest(r, out, 0, &len, &seq), 0);
  assert_int_equal(len, 0);
  assert_int_equal(pa_ring_read_next(r, &c, out, sizeof out, &len, &seq), 0);
  assert_int_equal(len, maxr);
  assert_true(pa_test_check(out, maxr, 1));

  /* Zero-copy: begin/commit; a commit without begin is refused. */
  assert_int_equal(pa_ring_write_commit(r), PA_SHM_EINVAL);
  uint8_t *slot = pa_ring_write_begin(r, 300);
  assert_non_null(slot);
  pa_test_fill(slot, 300, 3);
  assert_int_equal(pa_ring_write_commit(r), 3);
  assert_int_equal(pa_ring_write_commit(r), PA_SHM_EINVAL);
  assert_int_equal(pa_ring_read_latest(r, out, sizeof out, &len, &seq), 0);
  assert_int_equal(seq, 3);
  assert_int_equal(len, 300);
  assert_true(pa_test_check(out, 300, 3));
  free(r);
}

/* A writer that died between marking a slot busy and publishing it. */
static void test_ring_torn_slot(void **st) {
  (void)st;
  pa_ring *r = new_ring(4, 64, 1);
  uint8_t in[64], out[64];
  uint32_t len;
  uint64_t seq;
  for (uint64_t n = 1; n <= 4; n++) {
    pa_test_fill(in, 64, n);
    pa_ring_write(r, in, 64);
  }
  /* Record 5 goes to record 1's slot: half written, never committed. */
  uint8_t *p = pa_ring_write_begin(r, 64);
  memset(p, 0xee, 32);
  assert_int_equal(pa_ring_head(r), 4);
  pa_ring_cursor c = {1, 0};
  uint64_t got[8];
  int n = 0;
  while (pa_ring_read_next(r, &c, out, sizeof out, &len, &seq) == 0) {
    assert_true(pa_test_check(out, len, seq));
    got[n++] = seq;
  }
  assert_int_equal(n, 3);
  assert_int_equal(got[0], 2);
  assert_int_equal(c.missed, 1); /* the torn slot is skipped and counted */
  assert_int_equal(pa_ring_read_latest(r, out, sizeof out, &len, &seq), 0);
  assert_int_equal(seq, 4);
  /* The restarted writer continues the sequence in the same slot. */
  pa_test_fill(in, 64, 5);
  assert_int_equal(pa_ring_write(r, in, 64), 5);
  assert_int_equal(pa_ring_read_next(r, &c, out, sizeof out, &len, &seq), 0);
  assert_int_equal(seq, 5);
  assert_true(pa_test_check(out, 64, 5));
  free(r);
}

/* A record read in place: gone once lapped, not yet written, or torn by a
 * rewrite after the peek (pa_ring_still says so). */
static void test_ring_peek(void **st) {
  (void)st;
  pa_ring *r = new_ring(4, 64, 1);
  uint8_t in[64];
  uint32_t len = 0;
  assert_null(pa_ring_peek(r, 1, &len)); /* nothing written yet */
  for (uint64_t n = 1; n <= 6; n++) {
    pa_test_fill(in, (uint32_t)(16 + n), n);
    pa_ring_write(r, in, (uint32_t)(16 + n));
  }
  assert_null(pa_ring_peek(r, 0, &len));
  assert_null(pa_ring_peek(r, 2, &len)); /* lapped by record 6 */
  assert_null(pa_ring_peek(r, 7, &len)); /* after the head */
  const uint8_t *p = pa_ring_peek(r, 3, &len);
  assert_non_null(p);
  assert_int_equal(len, 19);
  assert_true(pa_test_check(p, 19, 3));
  assert_true(pa_ring_still(r, 3));
  /* Record 7 overwrites record 3's slot: the earlier peek is stale. */
  pa_test_fill(in, 64, 7);
  pa_ring_write(r, in, 64);
  assert_false(pa_ring_still(r, 3));
  assert_null(pa_ring_peek(r, 3, &len));
  /* Half a record: busy until committed. */
  uint8_t *w = pa_ring_write_begin(r, 64);
  memset(w, 0xee, 64);
  assert_false(pa_ring_still(r, 4));
  assert_null(pa_ring_peek(r, 8, &len));
  assert_int_equal(pa_ring_write_commit(r), 8);
  assert_non_null(pa_ring_peek(r, 8, &len));
  assert_true(pa_ring_still(r, 8));
  free(r);
}

/* Resident kB of this process's mapping that starts at p (smaps), or -1. */
static long mapping_rss_kb(const void *p) {
  char line[512];
  FILE *f = fopen("/proc/self/smaps", "r");
  long kb = -1;
  bool in = false;
  while (f && fgets(line, sizeof line, f)) {
    unsigned long lo, hi;
    if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2)
      in = lo == (unsigned long)(uintptr_t)p;
    else if (in && !strncmp(line, "Rss:", 4)) {
      kb = strtol(line + 4, NULL, 10);
      break;
    }
  }
  if (f)
    fclose(f);
  return kb;
}

/* pa_ring_unmap_slots: the reader's view of the slots goes (its resident
 * memory drops), the records stay in the shared mapping and read again. */
static void test_ring_unmap_slots(void **st) {
  (void)st;
  size_t bytes = pa_ring_bytes(64, 8192, 1);
  void *mem = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
                   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  assert_true(mem != MAP_FAILED);
  assert_int_equal(pa_ring_init(mem, 64, 8192, 1), 0);
  pa_ring *r = mem;
  static uint8_t in[8192], out[8192];
  for (uint64_t n = 1; n <= 64; n++) {
    pa_test_fill(in, sizeof in, n);
    assert_int_equal(pa_ring_write(r, in, sizeof in), (int64_t)n);
  }
  long before = mapping_rss_kb(mem);
  assert_true(before >= 64 * 8);
  pa_ring_unmap_slots(r);
  long after = mapping_rss_kb(mem);
  assert_true(after >= 0 && after < 16); /* the header's pages at most */
  pa_ring_cursor c = {1, 0};
  uint32_t len;
  uint64_t seq;
  for (uint64_t n = 1; n <= 64; n++) {
    assert_int_equal(pa_ring_read_next(r, &c, out, sizeof out, &len, &seq), 0);
    assert_int_equal(seq, n);
    assert_int_equal(len, sizeof out);
    assert_true(pa_test_check(out, sizeof out, n));
  }
  assert_int_equal(pa_ring_head(r), 64);
  munmap(mem, bytes);
}

static void test_ring_readers(void **st) {
  (void)st;
  pa_ring *r = new_ring(8, 64, 3);
  int a = pa_ring_reader_register(r), b = pa_ring_reader_register(r),
      c = pa_ring_reader_register(r);
  assert_true(a >= 0 && b >= 0 && c >= 0 && a != b && b != c && a != c);
  assert_int_equal(pa_ring_reader_register(r), PA_SHM_EFULL);
  assert_int_equal(pa_ring_wait(r, 7, 0), PA_SHM_EINVAL);
  assert_null(pa_ring_reader_sem(r, -1));

  /* Nothing written: times out. */
  int64_t t0 = pa_now_ns();
  assert_int_equal(pa_ring_wait(r, a, 20000000), PA_SHM_ETIMEDOUT);
  assert_true(pa_now_ns() - t0 >= 19000000);
  /* Many records leave at most one pending post per reader. */
  uint8_t in[64] = {0};
  for (int i = 0; i < 100; i++)
    pa_ring_write(r, in, sizeof in);
  int v = -1;
  sem_getvalue(pa_ring_reader_sem(r, b), &v);
  assert_int_equal(v, 1);
  assert_int_equal(pa_ring_wait(r, b, 0), 0);
  assert_int_equal(pa_ring_wait(r, b, 0), PA_SHM_ETIMEDOUT);
  /* Unregistered readers get no posts; their entry is reusable. */
  pa_ring_reader_unregister(r, c);
  pa_ring_reader_unregister(r, 99); /* ignored */
  assert_int_equal(pa_ring_wait(r, a, -1), 0);
  int c2 = pa_ring_reader_register(r);
  assert_int_equal(c2, c);
  assert_int_equal(pa_ring_wait(r, c2, 0), PA_SHM_ETIMEDOUT);
  pa_ring_write(r, in, sizeof in);
  assert_int_equal(pa_ring_wait(r, c2, 0), 0);
  free(r);
}

/* A reader that registered and died leaves an entry the next one reclaims. */
static void test_ring_dead_reader_reclaimed(void **st) {
  (void)st;
  char name[PA_SHM_NAME_MAX], err[256];
  raw_name(name, sizeof name, "reclaim", "ring");
  size_t rb = pa_ring_bytes(4, 64, 2);
  pa_shm_seg seg;
  assert_int_equal(pa_shm_create(&seg, name, PA_SEG_TEST, NULL, BODY + rb, 1, err, sizeof err), 0);
  pa_ring *r = (pa_ring *)((char *)seg.base + BODY);
  assert_int_equal(pa_ring_init(r, 4, 64, 2), 0);
  pa_shm_publish(&seg);
  assert_true(pa_ring_reader_register(r) >= 0);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    pa_shm_seg cs;
    if (pa_shm_attach(&cs, name, PA_SEG_TEST, NULL, NULL, 0))
      _exit(2);
    int k = pa_ring_reader_register((pa_ring *)((char *)cs.base + BODY));
    _exit(k >= 0 ? 0 : 3); /* dies holding the entry */
  }
  int status;
  assert_int_equal(waitpid(pid, &status, 0), pid);
  assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  /* Both entries taken, one by a dead pid: registration reclaims it. */
  int k = pa_ring_reader_register(r);
  assert_true(k >= 0);
  assert_int_equal(pa_ring_reader_register(r), PA_SHM_EFULL);
  /* The reclaimed semaphore starts empty. */
  assert_int_equal(pa_ring_wait(r, k, 0), PA_SHM_ETIMEDOUT);
  pa_shm_detach(&seg);
  pa_shm_unlink(name);
}

/* ---- queue --------------------------------------------------------------- */

static void test_queue(void **st) {
  (void)st;
  assert_int_equal(pa_queue_bytes(0, 8), 0);
  assert_int_equal(pa_queue_bytes(4, 0), 0);
  void *m = amem(pa_queue_bytes(5, sizeof(pa_cmd)));
  assert_int_equal(pa_queue_init(m, 0, 8), PA_SHM_EINVAL);
  assert_int_equal(pa_queue_init((char *)m + 4, 5, 8), PA_SHM_EINVAL);
  assert_int_equal(pa_queue_init(m, 5, sizeof(pa_cmd)), 0);
  char err[200];
  assert_int_equal(pa_queue_check(m, pa_queue_bytes(5, sizeof(pa_cmd)), err, sizeof err), 0);
  assert_int_equal(pa_queue_check(m, 100, err, sizeof err), PA_SHM_EMISMATCH);
  pa_queue *q = m;
  pa_cmd c, got;
  memset(&c, 0, sizeof c);
  assert_int_equal(pa_queue_peek(q, &got), PA_SHM_EMPTY);
  assert_int_equal(pa_queue_wait(q, 10000000), PA_SHM_ETIMEDOUT);
  uint64_t pushed = 0, popped = 0;
  /* Many laps: FIFO order, positions, full reported, nothing lost. */
  for (int round = 0; round < 20; round++) {
    while (pa_queue_space(q) > 0) {
      c.request_id = ++pushed;
      assert_int_equal(pa_queue_push(q, &c), 0);
    }
    assert_int_equal(pa_queue_count(q), 5);
    c.request_id = 999999;
    assert_int_equal(pa_queue_push(q, &c), PA_SHM_EFULL);
    assert_int_equal(pa_queue_wait(q, 0), 0);
    int take = 1 + round % 5;
    for (int i = 0; i < take; i++) {
      int64_t pos = pa_queue_peek(q, &got);
      assert_int_equal(pos, (int64_t)popped);
      /* peek does not consume */
      assert_int_equal(pa_queue_peek(q, NULL), pos);
      assert_int_equal(got.request_id, popped + 1);
      pa_queue_pop(q);
      popped++;
    }
  }
  while (pa_queue_peek(q, &got) >= 0) {
    assert_int_equal(got.request_id, ++popped);
    pa_queue_pop(q);
  }
  assert_int_equal(popped, pushed);
  pa_queue_pop(q); /* pop on empty is harmless */
  assert_int_equal(pa_queue_count(q), 0);
  assert_int_equal(pa_queue_space(q), 5);
  assert_non_null(pa_queue_sem(q));
  free(m);
}

/* A watched push posts nothing while the deadline lies ahead, posts once it
 * is 0 or past, and is FIFO and full like pa_queue_push. */
static void test_queue_push_watched(void **st) {
  (void)st;
  void *m = amem(pa_queue_bytes(3, sizeof(pa_cmd)));
  assert_int_equal(pa_queue_init(m, 3, sizeof(pa_cmd)), 0);
  pa_queue *q = m;
  pa_cmd c, got;
  memset(&c, 0, sizeof c);
  int v = -1;
  int64_t watch = pa_now_ns() + 500000000LL; /* polled for 0.5 s */
  c.request_id = 1;
  assert_int_equal(pa_queue_push_watched(q, &c, &watch), 0);
  assert_int_equal(sem_getvalue(pa_queue_sem(q), &v), 0);
  assert_int_equal(v, 0); /* no post: the poller sees it */
  assert_int_equal(pa_queue_count(q), 1);
  watch = 0; /* the poller stopped */
  c.request_id = 2;
  assert_int_equal(pa_queue_push_watched(q, &c, &watch), 0);
  assert_int_equal(sem_getvalue(pa_queue_sem(q), &v), 0);
  assert_int_equal(v, 1);
  assert_int_equal(pa_queue_wait(q, 0), 0);
  assert_int_equal(sem_trywait(pa_queue_sem(q)), 0);
  watch = pa_now_ns() - 1; /* a deadline past (a poller that died) */
  c.request_id = 3;
  assert_int_equal(pa_queue_push_watched(q, &c, &watch), 0);
  assert_int_equal(sem_getvalue(pa_queue_sem(q), &v), 0);
  assert_int_equal(v, 1);
  assert_int_equal(pa_queue_wait(q, 0), 0);
  /* a deadline an hour ahead (garbage from another process): posted */
  watch = pa_now_ns() + 3600000000000LL;
  c.request_id = 4;
  assert_int_equal(pa_queue_push_watched(q, &c, &watch), PA_SHM_EFULL);
  assert_true(pa_queue_peek(q, &got) >= 0);
  assert_int_equal(got.request_id, 1);
  pa_queue_pop(q);
  assert_int_equal(pa_queue_push_watched(q, &c, &watch), 0);
  assert_int_equal(sem_getvalue(pa_queue_sem(q), &v), 0);
  assert_int_equal(v, 1);
  for (uint64_t id = 2; id <= 4; id++) {
    assert_true(pa_queue_peek(q, &got) >= 0);
    assert_int_equal(got.request_id, id);
    pa_queue_pop(q);
  }
  assert_int_equal(pa_queue_count(q), 0);
  free(m);
}

/* push_many: all of them in order across the wrap with one post, or none
 * (a queue without room for all keeps what it holds and posts nothing). */
static void test_queue_push_many(void **st) {
  (void)st;
  void *m = amem(pa_queue_bytes(5, sizeof(pa_cmd)));
  assert_int_equal(pa_queue_init(m, 5, sizeof(pa_cmd)), 0);
  pa_queue *q = m;
  pa_cmd c[6], got;
  memset(c, 0, sizeof c);
  for (int i = 0; i < 6; i++)
    c[i].request_id = (uint64_t)i + 1;
  int v = -1;
  assert_int_equal(pa_queue_push_many(q, c, 2, sizeof c[0]), 0);
  assert_int_equal(sem_getvalue(pa_queue_sem(q), &v), 0);
  assert_int_equal(v, 1); /* one post for both */
  assert_int_equal(sem_trywait(pa_queue_sem(q)), 0);
  assert_int_equal(pa_queue_push_many(q, c + 2, 4, sizeof c[0]), PA_SHM_EFULL);
  assert_int_equal(pa_queue_push_many(q, c, 6, sizeof c[0]), PA_SHM_EFULL);
  assert_int_equal(pa_queue_count(q), 2); /* nothing of the refused ones */
  assert_int_equal(sem_getvalue(pa_queue_sem(q), &v), 0);
  assert_int_equal(v, 0);
  assert_int_equal(pa_queue_push_many(q, c, 0, sizeof c[0]), 0);
  for (uint64_t id = 1; id <= 2; id++) {
    assert_true(pa_queue_peek(q, &got) >= 0);
    assert_int_equal(got.request_id, id);
    pa_queue_pop(q);
  }
  /* head at 2 of 5: these 5 wrap around the end */
  assert_int_equal(pa_queue_push_many(q, c + 1, 5, sizeof c[0]), 0);
  assert_int_equal(pa_queue_space(q), 0);
  for (uint64_t id = 2; id <= 6; id++) {
    assert_true(pa_queue_peek(q, &got) >= 0);
    assert_int_equal(got.request_id, id);
    pa_queue_pop(q);
  }
  assert_int_equal(pa_queue_count(q), 0);
  free(m);
}

/* ---- stack --------------------------------------------------------------- */

static void test_status_codes(void **st) {
  (void)st;
  assert_string_equal(pa_status_code(PA_OK), "ok");
  assert_string_equal(pa_status_code(PA_ERR_UNKNOWN_ROBOT), "unknown_robot");
  assert_string_equal(pa_status_code(PA_ERR_BUSY), "busy");
  assert_string_equal(pa_status_code(PA_ERR_NOT_AUTHORIZED), "not_authorized");
  assert_string_equal(pa_status_code(PA_ERR_UNSUPPORTED_CONTROL_SCHEME),
                      "unsupported_control_scheme");
  for (int s = 0; s < PA_STATUS_COUNT; s++) {
    const char *c = pa_status_code((pa_status)s);
    assert_non_null(c);
    for (const char *p = c; *p; p++)
      assert_true((*p >= 'a' && *p <= 'z') || *p == '_');
  }
  assert_string_equal(pa_status_code((pa_status)999), "invalid_message");
}

static void test_stack_create_attach(void **st) {
  (void)st;
  char inst[PA_SHM_INSTANCE_MAX], err[256];
  pa_test_instance(inst, sizeof inst, "stack");
  assert_int_equal(pa_stack_probe(inst), PA_STACK_NONE);
  pa_stack_def d = small_def(inst);
  pa_stack s, a;
  err[0] = 'x';
  assert_int_equal(pa_stack_create(&s, &d, err, sizeof err), 0);
  assert_string_equal(err, ""); /* nothing stale to report */
  assert_int_equal(pa_stack_probe(inst), PA_STACK_LIVE);
  assert_int_equal(pa_test_shm_count(inst), 4);

  pa_stack s2;
  assert_int_equal(pa_stack_create(&s2, &d, err, sizeof err), PA_SHM_EEXIST);
  char pid[32];
  snprintf(pid, sizeof pid, "owner pid %d", (int)getpid());
  assert_non_null(strstr(err, pid));

  assert_int_equal(pa_stack_attach(&a, inst, err, sizeof err), 0);
  assert_int_equal(a.ctl->def.max_robots, 4);
  assert_int_equal(pa_ring_slot_count(a.scan), 64); /* max(64, 4 * 5 / 4) */
  assert_int_equal(pa_ring_max_record(a.camera), sizeof(pa_frame) + 64 * 48 * 3);
  assert_int_equal(pa_ring_max_record(a.state),
                   sizeof(pa_tick) + 4 * sizeof(pa_robot_state));
  /* room for 360 beams, slots of whole pages (a scan touches one page) */
  assert_true(pa_ring_max_record(a.scan) >= sizeof(pa_scan) + 4 * 360);
  assert_int_equal((16 + pa_ring_max_record(a.scan)) % 4096, 0);
  assert_true(pa_ring_max_record(a.scan) < sizeof(pa_scan) + 4 * 360 + 4096);
  assert_int_equal(pa_ring_slot_count(a.state), 64); /* auto: 4 MiB, <= 64 */
  assert_int_equal(pa_queue_space(a.cmd), 16);
  assert_int_equal(pa_queue_space(a.reply), 16);
  /* Arrays are shared: the creator's write is visible to the attacher. */
  snprintf(s.robots[3].name, sizeof s.robots[3].name, "r3");
  s.obstacles[7].active = 1;
  s.cam[2].subscribers = 5;
  assert_string_equal(a.robots[3].name, "r3");
  assert_int_equal(a.obstacles[7].active, 1);
  assert_int_equal(a.cam[2].subscribers, 5);
  /* render_wake is a working process-shared semaphore. */
  sem_post(&a.ctl->render_wake);
  assert_int_equal(sem_trywait(&s.ctl->render_wake), 0);
  /* Replies travel back. */
  pa_reply rep = {.client_id = 3, .request_id = 77, .status = PA_ERR_UNKNOWN_ROBOT};
  assert_int_equal(pa_queue_push(s.reply, &rep), 0);
  pa_reply got;
  assert_int_equal(pa_queue_peek(a.reply, &got), 0);
  assert_int_equal(got.request_id, 77);
  assert_int_equal(got.status, PA_ERR_UNKNOWN_ROBOT);
  pa_stack_detach(&a);
  pa_stack_detach(&s);

  assert_int_equal(pa_stack_unlink(inst), 4);
  assert_int_equal(pa_stack_probe(inst), PA_STACK_NONE);
  assert_int_equal(pa_stack_attach(&a, inst, err, sizeof err), PA_SHM_ENOENT);
  assert_non_null(strstr(err, "does not exist"));
  assert_int_equal(pa_stack_unlink("bad.name"), PA_SHM_EINVAL);
}

static void test_stack_bad_def(void **st) {
  (void)st;
  char inst[PA_SHM_INSTANCE_MAX], err[256];
  pa_test_instance(inst, sizeof inst, "def");
  pa_stack s;
  pa_stack_def d = small_def(inst);
  d.max_robots = 0;
  assert_int_equal(pa_stack_create(&s, &d, err, sizeof err), PA_SHM_EINVAL);
  assert_non_null(strstr(err, "max_robots is 0"));
  d = small_def(inst);
  d.max_readers = 1000;
  assert_int_equal(pa_stack_create(&s, &d, err, sizeof err), PA_SHM_EINVAL);
  assert_non_null(strstr(err, "max_readers is 1000"));
  d = small_def(inst);
  d.scan_slots = 1;
  assert_int_equal(pa_stack_create(&s, &d, err, sizeof err), PA_SHM_EINVAL);
  assert_non_null(strstr(err, "scan_slots"));
  d = small_def(inst);
  d.state_slots = 1;
  assert_int_equal(pa_stack_create(&s, &d, err, sizeof err), PA_SHM_EINVAL);
  assert_non_null(strstr(err, "state_slots is 1"));
  /* auto state slots at 1000 robots: what 4 MiB holds (27), not 64 */
  d = small_def(inst);
  d.max_robots = 1000;
  assert_int_equal(pa_stack_create(&s, &d, err, sizeof err), 0);
  assert_int_equal(pa_ring_slot_count(s.state), 27);
  assert_int_equal(pa_ring_slot_count(s.scan), 1250); /* max_robots * 5 / 4 */
  pa_stack_detach(&s);
  pa_stack_unlink(inst);
  d = small_def("bad name");
  assert_int_equal(pa_stack_create(&s, &d, err, sizeof err), PA_SHM_EINVAL);
  assert_non_null(strstr(err, "bad instance name"));
  assert_int_equal(pa_test_shm_count(inst), 0);
}

/* Attaching to an instance whose layout differs names the field. */
static void test_stack_mismatch(void **st) {
  (void)st;
  char inst[PA_SHM_INSTANCE_MAX], err[256];
  pa_stack s, a;
  create_small(&s, inst, "mis");

  pa_shm_header *sh = s.state_seg.base;
  sh->sizes[3] = 64;
  assert_int_equal(pa_stack_attach(&a, inst, err, sizeof err), PA_SHM_EMISMATCH);
  assert_non_null(strstr(err, ".state: max_robots is 64, expected 4"));
  sh->sizes[3] = 4;

  pa_shm_header *ch = s.ctl_seg.base;
  ch->sizes[3] += 8;
  assert_int_equal(pa_stack_attach(&a, inst, err, sizeof err), PA_SHM_EMISMATCH);
  assert_non_null(strstr(err, "sizeof(pa_ctl) is"));
  ch->sizes[3] -= 8;

  ch->version = PA_SHM_LAYOUT_VERSION + 1; /* a newer peer */
  assert_int_equal(pa_stack_attach(&a, inst, err, sizeof err), PA_SHM_EMISMATCH);
  char want[64];
  snprintf(want, sizeof want, ".ctl: layout version is %u, expected %u",
           PA_SHM_LAYOUT_VERSION + 1, PA_SHM_LAYOUT_VERSION);
  assert_non_null(strstr(err, want));
  ch->version = PA_SHM_LAYOUT_VERSION;

  pa_shm_header *camh = s.camera_seg.base;
  uint64_t boot = camh->boot_id;
  camh->boot_id = boot + 1;
  assert_int_equal(pa_stack_attach(&a, inst, err, sizeof err), PA_SHM_EMISMATCH);
  assert_non_null(strstr(err, "boot id"));
  camh->boot_id = boot;

  s.ctl->def.max_robots = 5; /* control block disagrees with its header */
  assert_int_equal(pa_stack_attach(&a, inst, err, sizeof err), PA_SHM_EMISMATCH);
  assert_non_null(strstr(err, "max_robots"));
  s.ctl->def.max_robots = 4;

  assert_int_equal(pa_stack_attach(&a, inst, err, sizeof err), 0);
  detach_unlink(&s, &a, inst);
}

/* An instance whose creator died is stale; create replaces it and says so. */
static void test_stack_stale(void **st) {
  (void)st;
  char inst[PA_SHM_INSTANCE_MAX], err[256];
  pa_test_instance(inst, sizeof inst, "stale");
  pa_stack_def d = small_def(inst);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    pa_stack s;
    _exit(pa_stack_create(&s, &d, NULL, 0) == 0 ? 0 : 1);
  }
  int status;
  assert_int_equal(waitpid(pid, &status, 0), pid);
  assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  assert_int_equal(pa_stack_probe(inst), PA_STACK_STALE);
  pa_stack a;
  /* Still attachable (a restarted process may inspect it). */
  assert_int_equal(pa_stack_attach(&a, inst, err, sizeof err), 0);
  assert_true(pa_shm_is_stale(a.ctl_seg.base));
  pa_stack_detach(&a);

  pa_stack s;
  assert_int_equal(pa_stack_create(&s, &d, err, sizeof err), 0);
  char want[96];
  snprintf(want, sizeof want, "owner pid %d is dead", (int)pid);
  assert_non_null(strstr(err, "replaced stale instance"));
  assert_non_null(strstr(err, want));
  assert_int_equal(pa_stack_probe(inst), PA_STACK_LIVE);
  assert_false(pa_shm_is_stale(s.ctl_seg.base));
  pa_stack_detach(&s);

  /* Leftover segments without a ctl are stale too. */
  pa_stack_unlink(inst);
  char name[PA_SHM_NAME_MAX];
  pa_shm_seg seg;
  pa_shm_name(name, sizeof name, inst, "scan", NULL, 0);
  assert_int_equal(pa_shm_create(&seg, name, PA_SEG_SCAN, NULL, 4096, 1, err, sizeof err), 0);
  pa_shm_detach(&seg);
  assert_int_equal(pa_stack_probe(inst), PA_STACK_STALE);
  assert_int_equal(pa_stack_unlink(inst), 1);
  assert_int_equal(pa_stack_probe(inst), PA_STACK_NONE);
}

/* A squatter's ctl as in the report: 4 KB, the ctl magic, owner pid 1
 * (alive), owned by uid and with mode. */
static void squat(const char *inst, uid_t uid, mode_t mode) {
  char name[PA_SHM_NAME_MAX];
  pa_shm_name(name, sizeof name, inst, "ctl", NULL, 0);
  int fd = shm_open(name, O_RDWR | O_CREAT | O_EXCL, 0600);
  assert_true(fd >= 0);
  assert_int_equal(ftruncate(fd, 4096), 0);
  pa_shm_header *h =
      mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  assert_true(h != MAP_FAILED);
  h->magic = PA_SHM_MAGIC;
  h->version = PA_SHM_LAYOUT_VERSION;
  h->kind = PA_SEG_CTL;
  h->header_size = sizeof *h;
  h->total_size = 4096;
  h->owner_pid = 1;
  h->ready = 1;
  munmap(h, 4096);
  assert_int_equal(fchmod(fd, mode), 0);
  assert_int_equal(fchown(fd, uid, (gid_t)-1), 0);
  close(fd);
}

/* /dev/shm squatting: objects not ours (another uid, or not 0600) are never
 * taken for a live instance of ours (it blocked the stack: "already
 * running") nor for a stale one; create replaces them when it may and says
 * so, else refuses by name; attach refuses them. Another user sees our live
 * instance as not ours, never stale. Needs root (tests run as root). */
static void test_stack_foreign(void **st) {
  (void)st;
  if (geteuid() != 0)
    skip();
  char inst[PA_SHM_INSTANCE_MAX], err[512];
  pa_test_instance(inst, sizeof inst, "squat");
  pa_stack_def d = small_def(inst);
  squat(inst, 65534, 0600);
  assert_int_equal(pa_stack_probe(inst), PA_STACK_FOREIGN);
  uint32_t uid, mode;
  int32_t owner;
  bool alive;
  assert_true(pa_stack_foreign_info(inst, &uid, &mode, &owner, &alive));
  assert_int_equal(uid, 65534);
  assert_int_equal(mode, 0600);
  assert_int_equal(owner, 1);
  assert_false(alive); /* pid 1 does not run as uid 65534 */
  pa_stack a;
  assert_true(pa_stack_attach(&a, inst, err, sizeof err) != 0);
  assert_non_null(strstr(err, "owned by uid 65534 with mode 0600, not ours"));
  pa_stack s;
  assert_int_equal(pa_stack_create(&s, &d, err, sizeof err), 0);
  assert_non_null(strstr(err, "replaced instance"));
  assert_non_null(strstr(err, "not ours (uid 65534, mode 0600, owner pid 1)"));
  assert_int_equal(pa_stack_probe(inst), PA_STACK_LIVE);
  pa_stack_detach(&s);
  pa_stack_unlink(inst);
  /* Our uid but a mode playarea never makes. */
  squat(inst, geteuid(), 0644);
  assert_int_equal(pa_stack_probe(inst), PA_STACK_FOREIGN);
  assert_int_equal(pa_stack_create(&s, &d, err, sizeof err), 0);
  assert_non_null(strstr(err, "mode 0644"));
  pa_stack_detach(&s);

  /* Another user (65534) and our live instance: not ours to it (it cannot
   * read it), never stale; it cannot remove it and says so by name; its ls
   * says not-ours and its gc leaves it. */
  int pfd[2];
  assert_int_equal(pipe(pfd), 0);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    close(pfd[0]);
    if (setgid(65534) != 0 || setuid(65534) != 0)
      _exit(9);
    char e[512] = "";
    pa_stack x;
    int probe = pa_stack_probe(inst);
    int rc = pa_stack_create(&x, &d, e, sizeof e);
    char msg[700];
    int n = snprintf(msg, sizeof msg, "%d %d %s", probe, rc, e);
    if (write(pfd[1], msg, (size_t)n) != n)
      _exit(8);
    _exit(0);
  }
  close(pfd[1]);
  char got[700] = "";
  ssize_t n = read(pfd[0], got, sizeof got - 1);
  close(pfd[0]);
  int status;
  assert_int_equal(waitpid(pid, &status, 0), pid);
  assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  assert_true(n > 0);
  got[n] = 0;
  int probe = -1, rc = 0;
  assert_int_equal(sscanf(got, "%d %d", &probe, &rc), 2);
  assert_int_equal(probe, PA_STACK_FOREIGN);
  assert_true(rc != 0);
  if (!strstr(got, "holds an object of uid 0 mode 0600, not ours (uid 65534, "
                   "0600), that we cannot remove"))
    fail_msg("as uid 65534: '%s'", got);
  assert_int_equal(pa_stack_probe(inst), PA_STACK_LIVE); /* untouched */

  /* pa-shmctl ls and gc as uid 65534. */
  char bin[512], log[600];
  static char out[1 << 16];
  pa_test_bin(bin, sizeof bin, "pa-shmctl");
  snprintf(log, sizeof log, "%s/shmctl-nobody.log", pa_test_tmpdir());
  for (int k = 0; k < 2; k++) {
    pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
      int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0666);
      if (fd < 0 || dup2(fd, 1) < 0 || dup2(fd, 2) < 0 || setgid(65534) != 0 ||
          setuid(65534) != 0)
        _exit(9);
      char prefix[32];
      snprintf(prefix, sizeof prefix, "t%d-", (int)getppid());
      execl(bin, bin, k ? "gc" : "ls", k ? prefix : NULL, (char *)NULL);
      _exit(127);
    }
    assert_int_equal(waitpid(pid, &status, 0), pid);
    pa_test_read_file(log, out, sizeof out);
    char *line = strstr(out, inst);
    if (!line)
      fail_msg("pa-shmctl %s as nobody:\n%s", k ? "gc" : "ls", out);
    char *eol = strchr(line, '\n');
    if (eol)
      *eol = 0;
    assert_non_null(
        strstr(line, k ? "not ours (uid 0, mode 0600)" : "not-ours"));
    assert_null(strstr(line, "stale"));
  }
  unlink(log);
  assert_int_equal(pa_stack_probe(inst), PA_STACK_LIVE);
  assert_int_equal(pa_stack_create(&s, &d, err, sizeof err), PA_SHM_EEXIST);
  pa_stack_unlink(inst);
}

/* A FIFO or a device planted under an instance's ctl name: every open
 * returns at once and refuses it by name; pa-shmctl ls lists it as refused
 * and gc leaves it; a launcher (as root) removes it and says why. */
static void test_stack_planted(void **st) {
  (void)st;
  char inst[PA_SHM_INSTANCE_MAX], name[PA_SHM_NAME_MAX], path[320], why[400];
  char err[512];
  static char out[1 << 16];
  for (int kind = 0; kind < 2; kind++) {
    pa_test_instance(inst, sizeof inst, kind ? "dev" : "fifo");
    assert_int_equal(pa_shm_name(name, sizeof name, inst, "ctl", NULL, 0), 0);
    snprintf(path, sizeof path, "/dev/shm%s", name);
    if (kind == 0)
      assert_int_equal(mkfifo(path, 0600), 0);
    else if (geteuid() != 0 || mknod(path, S_IFCHR | 0600, makedev(1, 3)) != 0)
      continue; /* a device needs root */
    const char *type = kind ? "(a character device)" : "(a FIFO)";
    assert_int_equal(pa_stack_probe(inst), PA_STACK_FOREIGN);
    assert_true(pa_stack_refused(inst, why, sizeof why));
    assert_non_null(strstr(why, path));
    assert_non_null(strstr(why, type));
    pa_shm_seg seg;
    assert_int_equal(
        pa_shm_attach(&seg, name, PA_SEG_CTL, NULL, err, sizeof err),
        PA_SHM_EMISMATCH);
    assert_non_null(strstr(err, "not a regular file"));
    assert_non_null(strstr(err, type));
    uint32_t uid, mode;
    int32_t owner;
    bool alive;
    assert_true(pa_stack_foreign_info(inst, &uid, &mode, &owner, &alive));
    assert_int_equal(shmctl(out, sizeof out, "ls", NULL), 0);
    char *l = strstr(out, inst);
    if (!l || !strstr(l, "refused") || !strstr(l, type))
      fail_msg("pa-shmctl ls with %s planted:\n%s", type, out);
    char prefix[32];
    snprintf(prefix, sizeof prefix, "t%d-", (int)getpid());
    assert_int_equal(shmctl(out, sizeof out, "gc", prefix), 0);
    assert_non_null(strstr(out, "refused"));
    assert_int_equal(access(path, F_OK), 0); /* gc leaves it */
    if (geteuid() == 0) {
      pa_stack_def d = small_def(inst);
      pa_stack s;
      assert_int_equal(pa_stack_create(&s, &d, err, sizeof err), 0);
      assert_non_null(strstr(err, "replaced instance"));
      assert_non_null(strstr(err, type));
      assert_int_equal(pa_stack_probe(inst), PA_STACK_LIVE);
      pa_stack_detach(&s);
    }
    pa_stack_unlink(inst);
    unlink(path);
  }
}

static void test_stack_map(void **st) {
  (void)st;
  char inst[PA_SHM_INSTANCE_MAX], err[256];
  pa_stack s, a;
  create_small(&s, inst, "map");
  assert_int_equal(pa_stack_attach(&a, inst, err, sizeof err), 0);
  pa_shm_seg m1, m2;
  const pa_map_block *mb;
  const int8_t *cells;
  assert_int_equal(pa_stack_map_attach(&a, &m1, &mb, &cells, err, sizeof err),
                   PA_SHM_ENOENT);

  int8_t g1[6] = {0, 100, -1, 0, 50, 100};
  assert_int_equal(pa_stack_map_publish(&s, 3, 2, 0.05, -1.0, -2.0, 0.0, g1, 100, err, sizeof err), 0);
  assert_int_equal(a.ctl->map_gen, 1);
  assert_int_equal(pa_stack_map_attach(&a, &m1, &mb, &cells, err, sizeof err), 0);
  assert_int_equal(mb->width, 3);
  assert_int_equal(mb->height, 2);
  assert_true(mb->resolution == 0.05 && mb->origin_x == -1.0 && mb->origin_y == -2.0);
  assert_int_equal(mb->gen, 1);
  assert_memory_equal(cells, g1, 6);

  /* Replace with a bigger map: the old mapping stays valid until detach. */
  int8_t g2[25];
  memset(g2, 100, sizeof g2);
  assert_int_equal(pa_stack_map_publish(&s, 5, 5, 0.1, 0, 0, 0.5, g2, 100, err, sizeof err), 0);
  assert_int_equal(a.ctl->map_gen, 2);
  assert_memory_equal(cells, g1, 6);
  const pa_map_block *mb2;
  const int8_t *cells2;
  assert_int_equal(pa_stack_map_attach(&a, &m2, &mb2, &cells2, err, sizeof err), 0);
  assert_int_equal(mb2->width, 5);
  assert_int_equal(mb2->gen, 2);
  assert_memory_equal(cells2, g2, 25);
  pa_shm_detach(&m1);
  pa_shm_detach(&m2);

  /* Bad maps are refused with the reason and leave the current one. */
  assert_int_equal(pa_stack_map_publish(&s, 0, 5, 0.1, 0, 0, 0, g2, 100, err, sizeof err), PA_SHM_EINVAL);
  assert_non_null(strstr(err, "0 x 5"));
  assert_int_equal(pa_stack_map_publish(&s, 5, 5, NAN, 0, 0, 0, g2, 100, err, sizeof err), PA_SHM_EINVAL);
  assert_non_null(strstr(err, "resolution"));
  assert_int_equal(pa_stack_map_publish(&s, 5, 5, 0.1, INFINITY, 0, 0, g2, 100, err, sizeof err), PA_SHM_EINVAL);
  assert_int_equal(pa_stack_map_publish(&s, 5, 5, 0.1, 0, 0, 0, NULL, 100, err, sizeof err), PA_SHM_EINVAL);
  assert_int_equal(a.ctl->map_gen, 2);
  assert_int_equal(pa_test_shm_count(inst), 5);
  pa_stack_detach(&a);
  pa_stack_detach(&s);
  assert_int_equal(pa_stack_unlink(inst), 5);
  assert_int_equal(pa_test_shm_count(inst), 0);
}

/* A scan as sectors (step_batch's data.beams): each sector's least range,
 * a NaN only where the whole sector is, sectors by integer bounds when the
 * count does not divide, empty ones NaN; the row's angle step widened. */
static void test_obs_sectors(void **st) {
  (void)st;
  const float N = NAN;
  float src[10] = {5, 4, 3, 9, 8, 7, 1, 2, 6, 0.5f}, out[8];
  pa_obs_sectors(out, 5, src, 10);
  const float even[5] = {4, 3, 7, 1, 0.5f};
  assert_memory_equal(out, even, sizeof even);
  pa_obs_sectors(out, 3, src, 10); /* [0,3) [3,6) [6,10) */
  assert_true(out[0] == 3 && out[1] == 7 && out[2] == 0.5f);
  pa_obs_sectors(out, 1, src, 10);
  assert_true(out[0] == 0.5f);
  float nan_src[6] = {N, 2, N, N, 3, N};
  pa_obs_sectors(out, 3, nan_src, 6); /* NaN loses to a number */
  assert_true(out[0] == 2 && isnan(out[1]) && out[2] == 3);
  float few[2] = {7, 8};
  pa_obs_sectors(out, 4, few, 2); /* more sectors than beams: empty ones */
  assert_true(isnan(out[0]) && out[1] == 7 && isnan(out[2]) && out[3] == 8);
  out[0] = 42;
  pa_obs_sectors(out, 0, src, 10); /* none: nothing written */
  assert_true(out[0] == 42);
  /* a whole sector of NaNs stays NaN, its neighbours do not (every width,
   * four beams at a time and beam by beam, with NaNs anywhere: the
   * test_obs_sectors program, here and for AArch64) */
  float scan[360], got[36];
  for (uint32_t i = 0; i < 360; i++)
    scan[i] = i >= 120 && i < 130 ? N : (float)((i * 7919u) % 1009u) / 100.0f;
  pa_obs_sectors(got, 36, scan, 360);
  assert_true(isnan(got[12]) && !isnan(got[11]) && !isnan(got[13]));
  assert_true(fabs(pa_obs_sector_inc(0.01, 360, 36) - 0.1) < 1e-12);
  assert_true(pa_obs_sector_inc(0.01, 0, 36) == 0.01); /* no scan: as is */
  /* a block row's ranges: sectors with the row's angle step widened, or the
   * scan copied and NaN after it, or NaN without a scan */
  double row[PA_OBS_FIELDS] = {0};
  row[PA_OBS_ANGLE_INC] = 0.5;
  float r[6];
  pa_obs_ranges(r, 5, row, src, 10, 5);
  assert_memory_equal(r, even, sizeof even);
  assert_true(row[PA_OBS_ANGLE_INC] == 1.0);
  row[PA_OBS_ANGLE_INC] = 0.5;
  pa_obs_ranges(r, 6, row, few, 2, 0);
  assert_true(r[0] == 7 && r[1] == 8 && isnan(r[2]) && isnan(r[5]));
  assert_true(row[PA_OBS_ANGLE_INC] == 0.5);
  pa_obs_ranges(r, 3, row, src, 10, 0); /* a wider scan: its first 3 */
  assert_true(r[0] == 5 && r[1] == 4 && r[2] == 3);
  pa_obs_ranges(r, 4, row, NULL, 0, 4); /* no scan yet */
  assert_true(isnan(r[0]) && isnan(r[3]) && row[PA_OBS_ANGLE_INC] == 0.5);
  pa_obs_ranges(r, 0, row, src, 10, 4); /* a block without scans: nothing */
  assert_true(row[PA_OBS_ANGLE_INC] == 0.5);
}

static void test_world_seqlock(void **st) {
  (void)st;
  char inst[PA_SHM_INSTANCE_MAX], err[256];
  pa_stack s, a;
  create_small(&s, inst, "world");
  assert_int_equal(pa_stack_attach(&a, inst, err, sizeof err), 0);
  uint64_t q = pa_stack_world_read_begin(&a);
  assert_int_equal(q & 1, 0);
  assert_false(pa_stack_world_read_retry(&a, q));
  pa_stack_world_begin(&s);
  snprintf(s.robots[0].name, sizeof s.robots[0].name, "alpha");
  s.robots[0].active = 1;
  /* A reader that started before the write must retry. */
  assert_true(pa_stack_world_read_retry(&a, q));
  pa_stack_world_end(&s);
  assert_int_equal(a.ctl->world_gen, 1);
  q = pa_stack_world_read_begin(&a);
  assert_string_equal(a.robots[0].name, "alpha");
  assert_false(pa_stack_world_read_retry(&a, q));

  /* Writer killed inside an update: odd seq; readers give up waiting
   * (bounded) and must retry; the restarted writer's update recovers. */
  pa_stack_world_begin(&s);
  int64_t t0 = pa_now_ns();
  q = pa_stack_world_read_begin(&a);
  assert_true(q & 1);
  assert_true(pa_now_ns() - t0 < 5000000000LL);
  assert_true(pa_stack_world_read_retry(&a, q));
  pa_stack_world_begin(&s);
  pa_stack_world_end(&s);
  q = pa_stack_world_read_begin(&a);
  assert_int_equal(q & 1, 0);
  assert_false(pa_stack_world_read_retry(&a, q));
  assert_int_equal(a.ctl->world_gen, 2);
  detach_unlink(&s, &a, inst);
}

/* ---- pa-shmctl ----------------------------------------------------------- */

/* Runs pa-shmctl with args; returns its exit code, output in out. */
static int shmctl(char *out, size_t n, const char *a1, const char *a2) {
  char bin[512], log[600];
  pa_test_bin(bin, sizeof bin, "pa-shmctl");
  snprintf(log, sizeof log, "%s/shmctl.log", pa_test_tmpdir());
  unlink(log);
  char *argv[] = {bin, (char *)a1, (char *)a2, NULL};
  pid_t pid = pa_test_spawn(argv, log);
  assert_true(pid > 0);
  int status = pa_test_stop(pid, 0, 20000);
  pa_test_read_file(log, out, n);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static void test_shmctl(void **st) {
  (void)st;
  char live[PA_SHM_INSTANCE_MAX], dead[PA_SHM_INSTANCE_MAX], err[256];
  static char out[1 << 16];
  pa_test_instance(live, sizeof live, "ctl-live");
  pa_test_instance(dead, sizeof dead, "ctl-dead");
  pa_stack_def d = small_def(live);
  pa_stack s;
  assert_int_equal(pa_stack_create(&s, &d, err, sizeof err), 0);
  pa_stack_def dd = small_def(dead);
  pid_t pid = fork();
  if (pid == 0) {
    pa_stack x;
    _exit(pa_stack_create(&x, &dd, NULL, 0) == 0 ? 0 : 1);
  }
  waitpid(pid, NULL, 0);
  assert_int_equal(pa_stack_probe(dead), PA_STACK_STALE);

  assert_int_equal(shmctl(out, sizeof out, "ls", NULL), 0);
  char *l = strstr(out, live), *k = strstr(out, dead);
  assert_non_null(l);
  assert_non_null(k);
  assert_non_null(strstr(l, "live"));
  assert_non_null(strstr(k, "stale"));

  /* gc only this test's instances: other tests may hold stale ones. */
  char prefix[32];
  snprintf(prefix, sizeof prefix, "t%d-", (int)getpid());
  assert_int_equal(shmctl(out, sizeof out, "gc", prefix), 0);
  assert_non_null(strstr(out, dead));
  assert_null(strstr(out, live));
  assert_int_equal(pa_test_shm_count(dead), 0);
  assert_int_equal(pa_test_shm_count(live), 4);

  assert_int_equal(shmctl(out, sizeof out, "rm", live), 0);
  assert_int_equal(pa_test_shm_count(live), 0);
  assert_int_equal(shmctl(out, sizeof out, "rm", live), 1);
  assert_non_null(strstr(out, "no instance"));
  assert_int_equal(shmctl(out, sizeof out, "rm", "x.y"), 2);
  assert_non_null(strstr(out, "bad instance name"));
  assert_int_equal(shmctl(out, sizeof out, "frobnicate", NULL), 2);
  assert_non_null(strstr(out, "usage"));
  pa_stack_detach(&s);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_names),
      cmocka_unit_test(test_segment_validation),
      cmocka_unit_test(test_ring_bad_sizes),
      cmocka_unit_test(test_ring_wrap_and_lap),
      cmocka_unit_test(test_ring_sizes),
      cmocka_unit_test(test_ring_torn_slot),
      cmocka_unit_test(test_ring_peek),
      cmocka_unit_test(test_ring_unmap_slots),
      cmocka_unit_test(test_ring_readers),
      cmocka_unit_test(test_ring_dead_reader_reclaimed),
      cmocka_unit_test(test_queue),
      cmocka_unit_test(test_queue_push_watched),
      cmocka_unit_test(test_queue_push_many),
      cmocka_unit_test(test_status_codes),
      cmocka_unit_test(test_stack_create_attach),
      cmocka_unit_test(test_stack_bad_def),
      cmocka_unit_test(test_stack_mismatch),
      cmocka_unit_test(test_stack_stale),
      cmocka_unit_test(test_stack_map),
      cmocka_unit_test(test_stack_foreign),
      cmocka_unit_test(test_stack_planted),
      cmocka_unit_test(test_world_seqlock),
      cmocka_unit_test(test_obs_sectors),
      cmocka_unit_test(test_shmctl),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
