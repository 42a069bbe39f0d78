/* test_shm_mp.c - pa_shm across processes (fork): every record in order or
 * a counted gap, a writer SIGKILLed mid-stream and a new writer continuing,
 * a SIGSTOPped reader not slowing the writer, the command queue between two
 * processes, a whole stack attached from another process. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "pa_shm.h"
#include "testutil.h"

#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define BODY 192 /* header rounded up to 64: where bodies start */
#define MAX_KIDS 8

static pid_t kids[MAX_KIDS];
static int n_kids;

/* Forks a child that runs fn(arg) and exits with its result; it dies with
 * the test process. */
static pid_t spawn(int (*fn)(void *), void *arg) {
  pid_t parent = getpid();
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent)
      _exit(99);
    _exit(fn(arg));
  }
  if (n_kids < MAX_KIDS)
    kids[n_kids++] = pid;
  return pid;
}

/* Waits for pid up to timeout_ms (SIGKILL after); returns the exit code, or
 * 128 + signal. */
static int reap(pid_t pid, int timeout_ms) {
  int status = pa_test_stop(pid, 0, timeout_ms);
  for (int i = 0; i < n_kids; i++)
    if (kids[i] == pid)
      kids[i] = 0;
  if (status < 0)
    return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* Per-test teardown: no child outlives its test, even a failed one. */
static int kill_kids(void **st) {
  (void)st;
  for (int i = 0; i < n_kids; i++)
    if (kids[i] > 0) {
      kill(kids[i], SIGKILL);
      waitpid(kids[i], NULL, 0);
      kids[i] = 0;
    }
  n_kids = 0;
  return 0;
}

/* Results children report through an anonymous shared mapping. */
typedef struct result {
  uint64_t seen, missed, errors, last_seq, fulls;
  uint32_t registered;
  char msg[160];
} result;

static result *shared_results(int n) {
  void *p = mmap(NULL, sizeof(result) * (size_t)n, PROT_READ | PROT_WRITE,
                 MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  assert_true(p != MAP_FAILED);
  memset(p, 0, sizeof(result) * (size_t)n);
  return p;
}

/* Length of record seq: varies, covering 8 .. max. */
static uint32_t rec_len(uint64_t seq, uint32_t max) {
  return 8 + (uint32_t)((seq * 2654435761u) % (max - 7));
}

static pa_ring *make_ring(pa_shm_seg *seg, char *name, size_t name_sz,
                          const char *tag, uint32_t slots, uint32_t maxr,
                          uint32_t readers) {
  char inst[PA_SHM_INSTANCE_MAX], err[256];
  pa_test_instance(inst, sizeof inst, tag);
  assert_int_equal(pa_shm_name(name, name_sz, inst, "ring", err, sizeof err), 0);
  size_t rb = pa_ring_bytes(slots, maxr, readers);
  assert_true(rb > 0);
  assert_int_equal(pa_shm_create(seg, name, PA_SEG_TEST, NULL, BODY + rb, 1, err, sizeof err), 0);
  pa_ring *r = (pa_ring *)((char *)seg->base + BODY);
  assert_int_equal(pa_ring_init(r, slots, maxr, readers), 0);
  pa_shm_publish(seg);
  return r;
}

/* Children attach by name, as separately exec'd processes would. */
static pa_ring *attach_ring(pa_shm_seg *seg, const char *name) {
  if (pa_shm_attach(seg, name, PA_SEG_TEST, NULL, NULL, 0))
    return NULL;
  return (pa_ring *)((char *)seg->base + BODY);
}

static void wait_registered(result *res, int n) {
  int64_t t0 = pa_test_now_ms();
  for (;;) {
    int k = 0;
    for (int i = 0; i < n; i++)
      k += __atomic_load_n(&res[i].registered, __ATOMIC_ACQUIRE) ? 1 : 0;
    if (k == n)
      return;
    assert_true(pa_test_now_ms() - t0 < 20000);
    usleep(1000);
  }
}

/* ---- every record in order, or a counted gap ------------------------------ */

typedef struct reader_arg {
  const char *name;
  uint64_t total;   /* stop after this seq */
  uint32_t max;     /* max record size */
  int slow;         /* sleep now and then, to be lapped */
  result *res;
} reader_arg;

static int reader_main(void *p) {
  reader_arg *a = p;
  pa_shm_seg seg;
  pa_ring *r = attach_ring(&seg, a->name);
  if (!r)
    return 2;
  int k = pa_ring_reader_register(r);
  if (k < 0)
    return 3;
  __atomic_store_n(&a->res->registered, 1, __ATOMIC_RELEASE);
  uint8_t *buf = malloc(a->max);
  pa_ring_cursor c = {1, 0};
  uint64_t last = 0, last_missed = 0;
  int64_t deadline = pa_now_ns() + 40000000000LL;
  while (last < a->total && pa_now_ns() < deadline) {
    uint32_t len;
    uint64_t seq;
    int rc = pa_ring_read_next(r, &c, buf, a->max, &len, &seq);
    if (rc == PA_SHM_EMPTY) {
      pa_ring_wait(r, k, 200000000);
      continue;
    }
    if (rc != 0 || len != rec_len(seq, a->max) ||
        !pa_test_check(buf, len, seq) ||
        seq != last + 1 + (c.missed - last_missed)) {
      if (!a->res->errors)
        snprintf(a->res->msg, sizeof a->res->msg,
                 "rc %d seq %llu after %llu (missed %llu -> %llu) len %u", rc,
                 (unsigned long long)seq, (unsigned long long)last,
                 (unsigned long long)last_missed,
                 (unsigned long long)c.missed, len);
      a->res->errors++;
      if (rc != 0)
        break;
    }
    a->res->seen++;
    last = seq;
    last_missed = c.missed;
    if (a->slow && a->res->seen % 1000 == 0)
      usleep(2000);
  }
  a->res->missed = c.missed;
  a->res->last_seq = last;
  pa_ring_reader_unregister(r, k);
  free(buf);
  pa_shm_detach(&seg);
  return 0;
}

static void run_readers(uint32_t slots, uint64_t total, int n_readers,
                        int slow_from, bool expect_lossless) {
  const uint32_t max = 256;
  pa_shm_seg seg;
  char name[PA_SHM_NAME_MAX];
  pa_ring *r = make_ring(&seg, name, sizeof name, "order", slots, max, 4);
  result *res = shared_results(n_readers);
  reader_arg args[4];
  pid_t pids[4];
  for (int i = 0; i < n_readers; i++) {
    args[i] = (reader_arg){name, total, max, i >= slow_from, &res[i]};
    pids[i] = spawn(reader_main, &args[i]);
  }
  wait_registered(res, n_readers);
  uint8_t buf[256];
  for (uint64_t n = 1; n <= total; n++) {
    uint32_t len = rec_len(n, max);
    pa_test_fill(buf, len, n);
    assert_int_equal(pa_ring_write(r, buf, len), (int64_t)n);
  }
  for (int i = 0; i < n_readers; i++) {
    assert_int_equal(reap(pids[i], 60000), 0);
    if (res[i].errors)
      fail_msg("reader %d: %llu errors, first: %s", i,
               (unsigned long long)res[i].errors, res[i].msg);
    assert_int_equal(res[i].last_seq, total);
    assert_int_equal(res[i].seen + res[i].missed, total);
    assert_true(res[i].seen > 0);
    if (expect_lossless)
      assert_int_equal(res[i].missed, 0);
    printf("# reader %d: seen %llu missed %llu of %llu\n", i,
           (unsigned long long)res[i].seen, (unsigned long long)res[i].missed,
           (unsigned long long)total);
  }
  if (slow_from < n_readers)
    assert_true(res[n_readers - 1].missed > 0); /* the slow one was lapped */
  munmap(res, sizeof(result) * (size_t)n_readers);
  pa_shm_detach(&seg);
  pa_shm_unlink(name);
}

/* Ring larger than the run: nobody can be lapped, so nobody misses one. */
static void test_mp_readers_lossless(void **st) {
  (void)st;
  run_readers(1u << 15, 30000, 2, 99, true);
}

/* Small ring, fast writer, one reader sleeping now and then. */
static void test_mp_readers_lapped(void **st) {
  (void)st;
  run_readers(64, 200000, 3, 2, false);
}

/* ---- a writer killed mid-stream, a new writer continuing ----------------- */

typedef struct writer_arg {
  const char *name;
  uint32_t len;
  uint64_t count;  /* 0 = forever */
  int die_midcopy; /* write_begin, half a copy, then SIGKILL itself */
  result *res;
} writer_arg;

static int writer_main(void *p) {
  writer_arg *a = p;
  pa_shm_seg seg;
  pa_ring *r = attach_ring(&seg, a->name);
  if (!r)
    return 2;
  if (a->die_midcopy) {
    uint64_t n = pa_ring_head(r) + 1;
    uint8_t *slot = pa_ring_write_begin(r, a->len);
    pa_test_fill(slot, a->len / 2, n);
    raise(SIGKILL);
  }
  uint8_t *buf = malloc(a->len);
  uint64_t first = pa_ring_head(r) + 1;
  for (uint64_t i = 0; a->count == 0 || i < a->count; i++) {
    uint64_t n = first + i;
    pa_test_fill(buf, a->len, n);
    if (pa_ring_write(r, buf, a->len) != (int64_t)n) {
      a->res->errors++;
      break;
    }
    a->res->last_seq = n;
  }
  free(buf);
  return a->res->errors ? 4 : 0;
}

/* Reads what the cursor can, verifying content; returns records read. */
static uint64_t drain(pa_ring *r, pa_ring_cursor *c, uint8_t *buf, uint32_t cap,
                      uint32_t want_len, uint64_t *last) {
  uint64_t n = 0;
  uint32_t len;
  uint64_t seq;
  while (pa_ring_read_next(r, c, buf, cap, &len, &seq) == 0) {
    assert_int_equal(len, want_len);
    if (!pa_test_check(buf, len, seq))
      fail_msg("record %llu has torn content", (unsigned long long)seq);
    assert_true(seq > *last);
    *last = seq;
    n++;
  }
  return n;
}

static void test_mp_writer_killed(void **st) {
  (void)st;
  const uint32_t len = 64 * 1024;
  pa_shm_seg seg;
  char name[PA_SHM_NAME_MAX];
  pa_ring *r = make_ring(&seg, name, sizeof name, "kill", 16, len, 2);
  result *res = shared_results(3);
  uint8_t *buf = malloc(len);
  pa_ring_cursor c = {1, 0};
  uint64_t last = 0, read = 0;

  /* 1: a writer streaming big records, SIGKILLed at a random point while
   * we read concurrently: no torn record ever surfaces. */
  writer_arg w1 = {name, len, 0, 0, &res[0]};
  pid_t p1 = spawn(writer_main, &w1);
  int64_t t0 = pa_test_now_ms();
  while (pa_ring_head(r) < 3000 && pa_test_now_ms() - t0 < 30000)
    read += drain(r, &c, buf, len, len, &last);
  assert_true(pa_ring_head(r) >= 3000);
  kill(p1, SIGKILL);
  assert_int_equal(reap(p1, 10000), 128 + SIGKILL);
  read += drain(r, &c, buf, len, len, &last);
  uint64_t head1 = pa_ring_head(r);
  assert_true(read > 0);
  assert_int_equal(last, head1);
  assert_int_equal(read + c.missed, head1);
  uint32_t l;
  uint64_t seq;
  assert_int_equal(pa_ring_read_latest(r, buf, len, &l, &seq), 0);
  assert_true(pa_test_check(buf, l, seq));

  /* 2: a writer killed in the middle of a copy leaves a busy slot. */
  writer_arg w2 = {name, len, 0, 1, &res[1]};
  pid_t p2 = spawn(writer_main, &w2);
  assert_int_equal(reap(p2, 10000), 128 + SIGKILL);
  assert_int_equal(pa_ring_head(r), head1);
  assert_int_equal(pa_ring_read_latest(r, buf, len, &l, &seq), 0);
  assert_int_equal(seq, head1);
  /* The busy slot held record head1 - 15: a fresh cursor skips and counts it. */
  pa_ring_cursor old = {head1 - 15, 0};
  uint64_t olast = 0;
  assert_int_equal(drain(r, &old, buf, len, len, &olast), 15);
  assert_int_equal(old.missed, 1);

  /* 3: a new writer continues the sequence from the segment. */
  writer_arg w3 = {name, len, 100, 0, &res[2]};
  pid_t p3 = spawn(writer_main, &w3);
  assert_int_equal(reap(p3, 30000), 0);
  assert_int_equal(res[2].last_seq, head1 + 100);
  assert_int_equal(pa_ring_head(r), head1 + 100);
  uint64_t before = c.missed;
  uint64_t more = drain(r, &c, buf, len, len, &last);
  assert_int_equal(last, head1 + 100);
  assert_int_equal(more + (c.missed - before), 100);
  assert_int_equal(more, 16); /* the ring holds the last 16 */
  free(buf);
  munmap(res, sizeof(result) * 3);
  pa_shm_detach(&seg);
  pa_shm_unlink(name);
}

/* ---- a stopped reader does not slow the writer --------------------------- */

static int write_n(pa_ring *r, uint64_t n) {
  uint8_t rec[64] = {0};
  for (uint64_t i = 0; i < n; i++)
    if (pa_ring_write(r, rec, sizeof rec) < 0)
      return -1;
  return 0;
}

static void test_mp_stopped_reader(void **st) {
  (void)st;
  const uint64_t N = 300000;
  pa_shm_seg seg;
  char name[PA_SHM_NAME_MAX];
  pa_ring *r = make_ring(&seg, name, sizeof name, "stop", 256, 64, 2);
  int64_t t0 = pa_now_ns();
  assert_int_equal(write_n(r, N), 0);
  int64_t t_none = pa_now_ns() - t0;

  result *res = shared_results(1);
  reader_arg a = {name, UINT64_MAX, 64, 0, res};
  pid_t pid = spawn(reader_main, &a);
  wait_registered(res, 1);
  assert_int_equal(kill(pid, SIGSTOP), 0);
  int status;
  assert_int_equal(waitpid(pid, &status, WUNTRACED), pid);
  assert_true(WIFSTOPPED(status));

  t0 = pa_now_ns();
  assert_int_equal(write_n(r, N), 0);
  int64_t t_stopped = pa_now_ns() - t0;
  printf("# %llu records: %.1f ms with no reader, %.1f ms with a stopped one\n",
         (unsigned long long)N, t_none / 1e6, t_stopped / 1e6);
  /* Loose on purpose (shared, loaded machine): same order of magnitude. */
  assert_true(t_stopped < 20 * t_none + 2000000000LL);
  /* The stopped reader holds one pending wake-up, not N. */
  int v = -1;
  sem_getvalue(pa_ring_reader_sem(r, 0), &v);
  assert_int_equal(v, 1);
  /* Resumed, it carries on and learns how much it missed. */
  kill(pid, SIGCONT);
  pa_ring_write(r, (uint8_t[64]){0}, 64);
  int64_t w0 = pa_test_now_ms();
  while (__atomic_load_n(&res->seen, __ATOMIC_RELAXED) == 0 &&
         pa_test_now_ms() - w0 < 20000)
    usleep(1000);
  kill(pid, SIGKILL);
  reap(pid, 10000);
  assert_true(res->seen > 0);
  munmap(res, sizeof(result));
  pa_shm_detach(&seg);
  pa_shm_unlink(name);
}

/* ---- the command queue between two processes ----------------------------- */

typedef struct prod_arg {
  const char *instance;
  uint64_t total;
  result *res;
} prod_arg;

static int producer_main(void *p) {
  prod_arg *a = p;
  pa_stack s;
  if (pa_stack_attach(&s, a->instance, a->res->msg, sizeof a->res->msg))
    return 2;
  pa_cmd c;
  memset(&c, 0, sizeof c);
  for (uint64_t id = 1; id <= a->total;) {
    c.client_id = id % 7;
    c.request_id = id;
    c.op = PA_OP_SYNC;
    if (pa_queue_push(s.cmd, &c) == PA_SHM_EFULL) {
      a->res->fulls++; /* reported, never dropped: retry later */
      sched_yield();
      continue;
    }
    id++;
  }
  pa_stack_detach(&s);
  return 0;
}

static void test_mp_queue(void **st) {
  (void)st;
  char inst[PA_SHM_INSTANCE_MAX], err[256];
  pa_stack_def d = pa_test_stack_def(inst, sizeof inst, "queue");
  d.max_robots = 2;
  d.cmd_capacity = 16;
  pa_stack s;
  assert_int_equal(pa_stack_create(&s, &d, err, sizeof err), 0);
  const uint64_t N = 50000;
  result *res = shared_results(1);
  prod_arg a = {inst, N, res};
  pid_t pid = spawn(producer_main, &a);
  pa_cmd c;
  for (uint64_t want = 1; want <= N; want++) {
    int rc = pa_queue_wait(s.cmd, 10000000000LL);
    if (rc)
      fail_msg("waiting for command %llu: %s", (unsigned long long)want,
               pa_shm_strerror(rc));
    int64_t pos = pa_queue_peek(s.cmd, &c);
    assert_int_equal(pos, (int64_t)(want - 1));
    assert_int_equal(c.request_id, want);
    assert_int_equal(c.client_id, want % 7);
    pa_queue_pop(s.cmd);
    if (want % 5000 == 0)
      usleep(5000); /* a slow consumer: the producer must see "full" */
  }
  assert_int_equal(reap(pid, 30000), 0);
  assert_int_equal(pa_queue_count(s.cmd), 0);
  assert_true(res->fulls > 0);
  printf("# %llu commands in order, producer told \"full\" %llu times\n",
         (unsigned long long)N, (unsigned long long)res->fulls);
  munmap(res, sizeof(result));
  pa_stack_detach(&s);
  pa_stack_unlink(inst);
}

/* ---- a stack used from another process ---------------------------------- */

static int sim_main(void *p) {
  const char *inst = p;
  pa_stack s;
  char err[256];
  if (pa_stack_attach(&s, inst, err, sizeof err))
    return 2;
  /* Answer one command, then publish a tick that echoes it. */
  if (pa_queue_wait(s.cmd, 20000000000LL))
    return 3;
  pa_cmd c;
  int64_t pos = pa_queue_peek(s.cmd, &c);
  if (pos < 0)
    return 4;
  s.ctl->cmd_inflight = (uint64_t)pos + 1;
  pa_reply rep = pa_test_reply_to(&c);
  rep.tick = 42;
  if (pa_queue_push(s.reply, &rep))
    return 5;
  s.ctl->cmd_inflight = 0;
  pa_queue_pop(s.cmd);
  uint8_t rec[sizeof(pa_tick) + sizeof(pa_robot_state)];
  memset(rec, 0, sizeof rec);
  pa_tick *t = (pa_tick *)rec;
  t->tick = 42;
  t->robot_count = 1;
  pa_robot_state *rs = (pa_robot_state *)(t + 1);
  rs->x = c.pose.x;
  if (pa_ring_write(s.state, rec, sizeof rec) != 1)
    return 6;
  pa_stack_detach(&s);
  return 0;
}

static void test_mp_stack_round_trip(void **st) {
  (void)st;
  char inst[PA_SHM_INSTANCE_MAX], err[256];
  pa_stack_def d = pa_test_stack_def(inst, sizeof inst, "trip");
  pa_stack s;
  assert_int_equal(pa_stack_create(&s, &d, err, sizeof err), 0);
  int k = pa_ring_reader_register(s.state);
  assert_true(k >= 0);
  pid_t pid = spawn(sim_main, inst);
  pa_cmd c = {.client_id = 5, .request_id = 1234, .op = PA_OP_TELEPORT};
  c.pose.x = 2.5;
  assert_int_equal(pa_queue_push(s.cmd, &c), 0);
  assert_int_equal(pa_queue_wait(s.reply, 20000000000LL), 0);
  pa_reply rep;
  assert_int_equal(pa_queue_peek(s.reply, &rep), 0);
  pa_queue_pop(s.reply);
  assert_int_equal(rep.request_id, 1234);
  assert_int_equal(rep.client_id, 5);
  assert_int_equal(rep.tick, 42);
  /* The state ring record wakes our registered reader. */
  assert_int_equal(pa_ring_wait(s.state, k, 20000000000LL), 0);
  uint8_t rec[sizeof(pa_tick) + sizeof(pa_robot_state)];
  uint32_t len;
  uint64_t seq;
  assert_int_equal(pa_ring_read_latest(s.state, rec, sizeof rec, &len, &seq), 0);
  assert_int_equal(len, sizeof rec);
  assert_true(((pa_robot_state *)(rec + sizeof(pa_tick)))->x == 2.5);
  assert_int_equal(reap(pid, 20000), 0);
  assert_int_equal(s.ctl->cmd_inflight, 0);
  pa_stack_detach(&s);
  pa_stack_unlink(inst);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_teardown(test_mp_readers_lossless, kill_kids),
      cmocka_unit_test_teardown(test_mp_readers_lapped, kill_kids),
      cmocka_unit_test_teardown(test_mp_writer_killed, kill_kids),
      cmocka_unit_test_teardown(test_mp_stopped_reader, kill_kids),
      cmocka_unit_test_teardown(test_mp_queue, kill_kids),
      cmocka_unit_test_teardown(test_mp_stack_round_trip, kill_kids),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
