/* test_shm.c - pa_shm in one process: segments, ring, queue, stack. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "pa_shm.h"
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void test_stack_smoke(void **state) {
  (void)state;
  char inst[PA_SHM_INSTANCE_MAX], err[256];
  pa_test_instance(inst, sizeof inst, "smoke");
  pa_stack_def d = pa_stack_def_default();
  snprintf(d.instance, sizeof d.instance, "%s", inst);
  d.max_robots = 4;
  pa_stack s, a;
  assert_int_equal(pa_stack_create(&s, &d, err, sizeof err), 0);
  assert_int_equal(pa_stack_probe(inst), PA_STACK_LIVE);
  assert_int_equal(pa_stack_attach(&a, inst, err, sizeof err), 0);
  assert_int_equal(a.ctl->def.max_robots, 4);
  uint8_t rec[64] = {1, 2, 3};
  assert_int_equal(pa_ring_write(s.state, rec, sizeof rec), 1);
  uint8_t out[64];
  uint32_t len = 0;
  uint64_t seq = 0;
  assert_int_equal(pa_ring_read_latest(a.state, out, sizeof out, &len, &seq), 0);
  assert_int_equal(seq, 1);
  assert_memory_equal(out, rec, sizeof rec);
  pa_cmd c = {.client_id = 7, .request_id = 9, .op = PA_OP_SYNC};
  assert_int_equal(pa_queue_push(a.cmd, &c), 0);
  pa_cmd got;
  assert_int_equal(pa_queue_peek(s.cmd, &got), 0);
  assert_int_equal(got.request_id, 9);
  pa_stack_detach(&a);
  pa_stack_detach(&s);
  assert_true(pa_stack_unlink(inst) >= 4);
  assert_int_equal(pa_stack_probe(inst), PA_STACK_NONE);
  assert_int_equal(pa_test_shm_count(inst), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_stack_smoke),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
