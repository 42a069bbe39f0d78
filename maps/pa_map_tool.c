/* pa_map_tool.c - pa-map: check, convert and preview maps. */
#include <stdio.h>

#include "pa_map.h"

int main(int argc, char **argv) {
  char err[1024];
  pa_grid g;
  if (argc < 3) {
    fprintf(stderr, "usage: pa-map check FILE.yaml\n");
    return 2;
  }
  if (pa_map_load_yaml(argv[2], &g, err, sizeof err)) {
    fprintf(stderr, "%s\n", err);
    return 1;
  }
  printf("%u x %u\n", g.width, g.height);
  pa_grid_free(&g);
  return 0;
}
