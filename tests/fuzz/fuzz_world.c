/* fuzz_world.c - libFuzzer target: world files (maps/pa_world.c), one
 * input = one world.yaml's bytes. A map path it names is resolved in the
 * fuzzer's private directory, where only the world file itself exists. */
#include "fuzz_common.h"
#include "pa_map.h"

#include <math.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char path[600];
  fz_write("world.yaml", data, size, path, sizeof path);
  pa_world w;
  char err[1024];
  err[0] = '\0';
  if (pa_world_load(path, &w, err, sizeof err) == 0) {
    if (w.robot_count == 0 || !w.robots)
      abort(); /* a world always has a robot to drive */
    for (size_t i = 0; i < w.robot_count; i++) {
      const pa_robot_def *r = &w.robots[i];
      if (!isfinite(r->x) || !isfinite(r->y) || !isfinite(r->theta) ||
          !(r->radius > 0) || memchr(r->name, '\0', sizeof r->name) == NULL)
        abort();
    }
    for (size_t i = 0; i < w.obstacle_count; i++)
      if (memchr(w.obstacles[i].name, '\0', sizeof w.obstacles[i].name) == NULL)
        abort();
    pa_world_free(&w);
  } else if (!err[0]) {
    abort();
  }
  return 0;
}
