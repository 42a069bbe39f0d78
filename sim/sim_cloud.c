/* sim_cloud.c - export_dataset's point clouds (OceanSim's point-cloud run
 * artifacts): every scan's returns as points in the world frame, the beam
 * turned by the scan's sensor pose and moved to it:
 *   points.csv  tick,sim_time,robot,seq,beam,x,y,z   one row a point
 *   points.ply  the same points as one binary little-endian PLY (float x, y,
 *               z [m], uint robot, uint seq), which CloudCompare, Open3D,
 *               PCL and MeshLab open as they are
 * A beam without a return (not finite, below range_min, at or beyond
 * range_max) is no point; z is 0, the plane. */
#define _GNU_SOURCE
#include "pa_sim.h"
#include "sim_int.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "points.ply is written as the host's bytes: little-endian hosts only"
#endif

#define COUNT_DIGITS 20 /* the vertex count, patched in when done */

typedef struct __attribute__((packed)) ply_point {
  float x, y, z;
  uint32_t robot, seq;
} ply_point;
_Static_assert(sizeof(ply_point) == 20, "a PLY vertex is 20 bytes");

void pa_sim_int_cloud_begin(pa_sim_cloud *c) {
  c->points = 0;
  c->count_at = -1;
  if (c->csv)
    fprintf(c->csv, "tick,sim_time,robot,seq,beam,x,y,z\n");
  if (!c->ply)
    return;
  fprintf(c->ply, "ply\nformat binary_little_endian 1.0\n"
                  "comment playarea export_dataset: laser returns, world "
                  "frame [m]\nelement vertex ");
  c->count_at = ftell(c->ply);
  fprintf(c->ply,
          "%0*u\nproperty float x\nproperty float y\nproperty float z\n"
          "property uint robot\nproperty uint seq\nend_header\n",
          COUNT_DIGITS, 0u);
}

void pa_sim_int_cloud_scan(pa_sim_cloud *c, const pa_scan *h,
                           const uint8_t *ranges) {
  for (uint32_t i = 0; i < h->count; i++) {
    float r;
    memcpy(&r, ranges + (size_t)i * sizeof r, sizeof r);
    if (!isfinite(r) || r < h->range_min || r >= h->range_max)
      continue;
    double a = h->theta + (double)h->angle_min +
               (double)i * (double)h->angle_increment;
    double x = h->x + (double)r * cos(a), y = h->y + (double)r * sin(a);
    if (c->csv)
      fprintf(c->csv, "%llu,%.9g,%u,%u,%u,%.9g,%.9g,0\n",
              (unsigned long long)h->tick, h->sim_time, h->robot, h->seq, i, x,
              y);
    if (c->ply) {
      ply_point p = {(float)x, (float)y, 0.0f, h->robot, h->seq};
      fwrite(&p, sizeof p, 1, c->ply);
    }
    c->points++;
  }
}

int pa_sim_int_cloud_end(pa_sim_cloud *c) {
  if (!c->ply || c->count_at < 0)
    return 0;
  char digits[COUNT_DIGITS + 1];
  snprintf(digits, sizeof digits, "%0*llu", COUNT_DIGITS,
           (unsigned long long)c->points);
  if (fflush(c->ply) != 0 || fseek(c->ply, c->count_at, SEEK_SET) != 0 ||
      fwrite(digits, 1, COUNT_DIGITS, c->ply) != COUNT_DIGITS ||
      fseek(c->ply, 0, SEEK_END) != 0)
    return -1;
  return 0;
}
