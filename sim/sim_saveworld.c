/* sim_saveworld.c - save_world: the world as it stands (robots at their
 * current poses with their properties, obstacles, the map) as a world YAML
 * that --world and set_scenario load (docs/world-format.md), under
 * --data_dir; the map is written beside it as <stem>.map.yaml + .png. */
#define _GNU_SOURCE
#include "pa_sim.h"
#include "sim_int.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static void colour(FILE *f, const uint8_t c[4]) {
  fprintf(f, "[%u, %u, %u, %u]", c[0], c[1], c[2], c[3]);
}

static void robot(FILE *f, const pa_robot_info *ri, const pa_robot_state *rs) {
  fprintf(f, "  - name: \"%s\"\n", ri->name);
  fprintf(f, "    pose: [%.17g, %.17g, %.17g]\n", rs->x, rs->y, rs->theta);
  fprintf(f, "    drive: %s\n",
          ri->drive == PA_DRIVE_OMNI ? "omni" : "differential");
  fprintf(f, "    radius: %.9g\n    wheel_base: %.9g\n", (double)ri->radius,
          (double)ri->wheel_base);
  fprintf(f, "    height: %.9g\n    head_height: %.9g\n", (double)ri->height,
          (double)ri->head_height);
  fprintf(f, "    colour: ");
  colour(f, ri->colour);
  fprintf(f,
          "\n    limits: {max_v: %.9g, max_vy: %.9g, max_w: %.9g, acc_v: %.9g, "
          "dec_v: %.9g, acc_w: %.9g, dec_w: %.9g, head_limit: %.9g, "
          "max_head_rate: %.9g}\n",
          (double)ri->max_v, (double)ri->max_vy, (double)ri->max_w,
          (double)ri->acc_v, (double)ri->dec_v, (double)ri->acc_w,
          (double)ri->dec_w, (double)ri->head_limit, (double)ri->max_head_rate);
  fprintf(f,
          "    laser: {beams: %u, range_min: %.9g, range_max: %.9g, noise: "
          "%.9g}\n",
          ri->laser_beams, (double)ri->laser_range_min,
          (double)ri->laser_range_max, (double)ri->laser_noise);
  fprintf(f, "    camera: {width: %u, height: %u, fov: %.9g}\n", ri->cam_width,
          ri->cam_height, ri->cam_fov * 180.0 / M_PI);
}

static void obstacle(FILE *f, const pa_obstacle_info *o) {
  fprintf(f, "  - {name: \"%s\", shape: %s, pose: [%.17g, %.17g, %.17g], ",
          o->name, o->shape == PA_SHAPE_CIRCLE ? "circle" : "box", o->x, o->y,
          o->theta);
  if (o->shape == PA_SHAPE_CIRCLE)
    fprintf(f, "radius: %.17g, ", o->radius);
  else
    fprintf(f, "size: [%.17g, %.17g], ", o->size_x, o->size_y);
  fprintf(f, "height: %.9g, colour: ", (double)o->height);
  colour(f, o->colour);
  fprintf(f, "}\n");
}

/* The map through fy and fp (temporary files of pa_safefile), committed:
 * 0, or -1 with r set and both removed. */
static int save_map(const pa_sim_model *m, pa_safe_file *fy, pa_safe_file *fp,
                    pa_reply *r) {
  char yp[64], pp[64], err[PA_CMD_PATH_MAX + 128];
  snprintf(yp, sizeof yp, "/proc/self/fd/%d", fy->fd);
  snprintf(pp, sizeof pp, "/proc/self/fd/%d", fp->fd);
  errno = 0;
  if (pa_map_save_named(&m->grid, yp, pp, fp->base, err, sizeof err) != 0) {
    int e = errno ? errno : EIO;
    pa_safe_abort(fy);
    pa_sim_int_file_end(fp, e, r);
    return -1;
  }
  if (pa_sim_int_file_end(fp, 0, r) != 0) {
    pa_safe_abort(fy);
    return -1;
  }
  return pa_sim_int_file_end(fy, 0, r);
}

pa_status pa_sim_int_save_world(const pa_sim_model *m, pa_sim_state *s,
                                const pa_cmd *c, pa_reply *r) {
  char cpath[PA_CMD_PATH_MAX];
  memcpy(cpath, c->path, sizeof cpath);
  cpath[sizeof cpath - 1] = 0;
  size_t n = strlen(cpath);
  if (n < 6 ||
      (strcmp(cpath + n - 5, ".yaml") && strcmp(cpath + n - 4, ".yml")))
    return pa_sim_int_fail(r, PA_ERR_INVALID_MESSAGE,
                           "save_world: path '%s' must end in .yaml", cpath);
  /* A world file names bodies with [A-Za-z0-9_.-] (spawned ones may hold
   * more): refused by name rather than written unloadable. */
  for (uint32_t i = 0; i < s->robot_count + s->obstacle_count; i++) {
    bool rob = i < s->robot_count;
    const char *nm = rob ? s->info[i].name : s->obs[i - s->robot_count].name;
    if (!(rob ? s->info[i].active : s->obs[i - s->robot_count].active))
      continue;
    if (!*nm ||
        strspn(nm, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                   "0123456789_.-") != strlen(nm))
      return pa_sim_int_fail(r, PA_ERR_INVALID_MESSAGE,
                             "save_world: %s '%.31s' has a name a world file "
                             "cannot hold (use A-Z a-z 0-9 _ . -)",
                             rob ? "robot" : "obstacle", nm);
  }
  /* <stem>.map.yaml and <stem>.map.png beside the world file: all three
   * checked (exists, symlinks) before any is written, the world last */
  char stem[PA_CMD_PATH_MAX], map_yaml[PA_CMD_PATH_MAX + 16],
      map_png[PA_CMD_PATH_MAX + 16];
  snprintf(stem, sizeof stem, "%s", cpath);
  *strrchr(stem, '.') = 0;
  snprintf(map_yaml, sizeof map_yaml, "%s.map.yaml", stem);
  snprintf(map_png, sizeof map_png, "%s.map.png", stem);
  pa_safe_file fw, fy, fp;
  fy.fd = fy.dirfd = fp.fd = fp.dirfd = -1;
  if (pa_sim_int_file_begin(m, c, cpath, &fw, r) != 0)
    return (pa_status)r->status;
  if (pa_sim_int_file_begin(m, c, map_yaml, &fy, r) != 0 ||
      pa_sim_int_file_begin(m, c, map_png, &fp, r) != 0) {
    pa_safe_abort(&fw);
    pa_safe_abort(&fy);
    return (pa_status)r->status;
  }
  if (save_map(m, &fy, &fp, r) != 0) {
    pa_safe_abort(&fw);
    return (pa_status)r->status;
  }
  FILE *f = fdopen(fw.fd, "w");
  if (!f) {
    int e = errno;
    pa_sim_int_file_end(&fw, e, r);
    return (pa_status)r->status;
  }
  fw.fd = -1; /* fclose closes it; committed after */
  const char *base = strrchr(map_yaml, '/');
  fprintf(f,
          "# A playarea world saved by save_world at tick %llu (sim time "
          "%.6f s).\n# Format: docs/world-format.md\n",
          (unsigned long long)s->tick, s->sim_time);
  fprintf(f, "map: \"%s\"\nunknown_blocks: %s\n", base ? base + 1 : map_yaml,
          m->unknown_blocks ? "true" : "false");
  uint32_t nr = 0, no = 0;
  fprintf(f, "robots:\n");
  for (uint32_t i = 0; i < s->robot_count; i++)
    if (s->info[i].active) {
      robot(f, &s->info[i], &s->rs[i]);
      nr++;
    }
  if (!nr) /* no robots: an empty list, not the default robot0 */
    fprintf(f, "  []\n");
  fprintf(f, "obstacles:\n");
  for (uint32_t i = 0; i < s->obstacle_count; i++)
    if (s->obs[i].active) {
      obstacle(f, &s->obs[i]);
      no++;
    }
  if (!no)
    fprintf(f, "  []\n");
  int e = fflush(f) != 0 || ferror(f) ? (errno ? errno : EIO) : 0;
  if (!e && fsync(fileno(f)) != 0)
    e = errno;
  if (fclose(f) != 0 && !e)
    e = errno;
  if (pa_sim_int_file_end(&fw, e, r) != 0)
    return (pa_status)r->status;
  r->snapshot.robots = nr;
  r->snapshot.obstacles = no;
  r->snapshot.tick = s->tick;
  r->snapshot.sim_time = s->sim_time;
  return PA_OK;
}
