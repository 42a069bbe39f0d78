/* test_rss.c - what a running stack keeps resident: pa-netgw's idle peeks
 * at the newest state leave no state-ring pages mapped, and pa-sim reads its
 * map cells from the map segment it published (no private copy), none of
 * them resident while it simulates. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "test_launch_util.h"

/* Resident kB of pid's mappings whose path ends with suffix (smaps' Rss
 * summed) and how many there are into *count. */
static long seg_rss_kb(pid_t pid, const char *suffix, int *count) {
  char path[64], line[512];
  snprintf(path, sizeof path, "/proc/%d/smaps", (int)pid);
  FILE *f = fopen(path, "r");
  assert_non_null(f);
  long sum = 0;
  bool in = false;
  size_t sl = strlen(suffix);
  *count = 0;
  while (fgets(line, sizeof line, f)) {
    unsigned long lo, hi;
    if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2 && strchr(line, '/') != NULL) {
      char *nl = strchr(line, '\n');
      if (nl)
        *nl = '\0';
      size_t n = strlen(line);
      in = n >= sl && !strcmp(line + n - sl, suffix);
      *count += in;
    } else if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2) {
      in = false;
    } else if (in && !strncmp(line, "Rss:", 4)) {
      sum += strtol(line + 4, NULL, 10);
    }
  }
  fclose(f);
  return sum;
}

static void test_idle_stack_resident(void **st) {
  (void)st;
  /* 100 robots: 64 state slots of 15 kB; 20 Hz peeks for 3 s visit most */
  const char *extra[] = {"--no-render", "--max_robots", "100",
                         "--robots",    "100",          NULL};
  lt_stack t;
  memset(&t, 0, sizeof t);
  assert_int_equal(lt_start(&t, "rss", extra, 30000), 0);
  usleep(3000000);
  pid_t sim = lt_pid(&t, PA_PROC_SIM), gw = lt_pid(&t, PA_PROC_NETGW);
  char state[PA_SHM_INSTANCE_MAX + 16], map[PA_SHM_INSTANCE_MAX + 16];
  snprintf(state, sizeof state, "%s.state", t.instance);
  snprintf(map, sizeof map, "%s.map", t.instance);
  int n = 0;
  long gw_state = gw > 0 ? seg_rss_kb(gw, state, &n) : -1;
  int gw_maps = n;
  long sim_state = sim > 0 ? seg_rss_kb(sim, state, &n) : -1;
  long sim_map = sim > 0 ? seg_rss_kb(sim, map, &n) : -1;
  int sim_maps = n;
  int rc = lt_stop(&t, 10000);
  printf("resident: pa-netgw state ring %ld kB, pa-sim state ring %ld kB, "
         "pa-sim map segment %ld kB (%d mapping)\n",
         gw_state, sim_state, sim_map, sim_maps);
  assert_int_equal(rc, 0);
  assert_int_equal(gw_maps, 1);
  /* pa-sim writes every slot (the ring is ~1 MB); the gateway's peeks keep
   * at most the window of the ring's header and one record's */
  assert_true(sim_state > 512);
  assert_true(gw_state >= 0 && gw_state <= 128);
  /* the model's cells are the map segment, untouched while running */
  assert_int_equal(sim_maps, 1);
  assert_int_equal(sim_map, 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_idle_stack_resident),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
