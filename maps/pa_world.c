/*
 * pa_world.c - YAML world files: map, robots, static obstacles.
 */
#include <stdio.h>
#include <string.h>

#include "pa_map_int.h"

int pa_world_load(const char *path, pa_world *w, char *err, size_t err_sz) {
  memset(w, 0, sizeof *w);
  snprintf(err, err_sz, "%s: world files are not implemented yet", path);
  return -1;
}
