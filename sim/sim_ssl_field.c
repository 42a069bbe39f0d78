/* sim_ssl_field.c - the SSL field of each division (pa_ssl_field.h). */
#include "pa_ssl_field.h"

#include <string.h>

int pa_ssl_field_get(char division, pa_ssl_field *f) {
  memset(f, 0, sizeof *f);
  if (division == 'A' || division == 'a') {
    *f = (pa_ssl_field){.division = 'A',
                        .length = 12.0,
                        .width = 9.0,
                        .goal_width = 1.8,
                        .defense_depth = 1.8,
                        .defense_width = 3.6};
  } else if (division == 'B' || division == 'b') {
    *f = (pa_ssl_field){.division = 'B',
                        .length = 9.0,
                        .width = 6.0,
                        .goal_width = 1.0,
                        .defense_depth = 1.0,
                        .defense_width = 2.0};
  } else {
    return -1;
  }
  f->boundary = 0.3;
  f->goal_depth = 0.18;
  f->goal_height = 0.16;
  f->goal_wall = 0.02;
  f->center_radius = 0.5;
  f->line_width = 0.01;
  f->wall_height = 0.1;
  return 0;
}
