/* sim_rec.c - export_dataset: pa-sim records the next ticks of the world
 * (ground truth, odometry, velocities, every scan) with its map and robots
 * into dataset_dir/<name>/, as plain files any tool reads:
 *   map.yaml + map.png  the map, map_server format (pa_map_save)
 *   robots.csv          id, name, drive, radius, laser settings
 *   poses.csv           one row per robot per tick
 *   scans.csv           one row per scan: stamp, pose, geometry, ranges
 * One recording at a time; it ends by itself after its ticks (or when pa-sim
 * stops: the files are flushed and closed). */
#define _GNU_SOURCE
#include "pa_sim.h"
#include "sim_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "pa_util.h"

struct pa_sim_rec {
  FILE *poses, *scans;
  uint64_t first_tick, end_tick; /* ticks recorded: [first, end] */
  uint64_t last_tick;            /* the last tick with pose rows */
  uint64_t rows, scan_rows;
  char dir[PA_SIM_DATASET_DIR_MAX + 40];
};

static FILE *open_in(const char *dir, const char *name, char *err,
                     size_t err_sz) {
  char path[PA_SIM_DATASET_DIR_MAX + 64];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *f = fopen(path, "w");
  if (!f)
    snprintf(err, err_sz, "cannot write %.150s: %s", path, strerror(errno));
  return f;
}

/* Closes f; false if anything written to it was lost (disk full, I/O). */
static bool close_ok(FILE *f) {
  if (!f)
    return true;
  bool ok = !ferror(f);
  return fclose(f) == 0 && ok;
}

/* Closes the files; false if a write failed. */
static bool rec_free(pa_sim_rec *r) {
  bool ok = close_ok(r->poses);
  ok = close_ok(r->scans) && ok;
  free(r);
  return ok;
}

/* Removes what a failed start wrote, so the name can be used again. */
static void rec_unlink(const char *dir) {
  static const char *const files[] = {"map.yaml", "map.png", "robots.csv",
                                      "poses.csv", "scans.csv"};
  char path[PA_SIM_DATASET_DIR_MAX + 64];
  for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
    snprintf(path, sizeof path, "%s/%s", dir, files[i]);
    unlink(path);
  }
  rmdir(dir);
}

/* A robot name as one CSV field: quoted, quotes doubled (spawn names are
 * any text). */
static void csv_name(FILE *f, const char *name) {
  fputc('"', f);
  for (const char *p = name; *p; p++) {
    if (*p == '"')
      fputc('"', f);
    fputc(*p, f);
  }
  fputc('"', f);
}

pa_status pa_sim_int_rec_start(const pa_sim_model *m, pa_sim_state *s,
                               const pa_cmd *c, pa_reply *r) {
  if (!m->def.dataset_dir[0])
    return pa_sim_int_fail(r, PA_ERR_INVALID_MESSAGE,
                           "export_dataset is off: start with --dataset_dir");
  if (s->rec)
    return pa_sim_int_fail(r, PA_ERR_BUSY,
                           "recording until tick %llu already",
                           (unsigned long long)s->rec->end_tick);
  if (!pa_snapshot_name_ok(c->name))
    return pa_sim_int_fail(r, PA_ERR_INVALID_MESSAGE,
                           "dataset name: 1 to %d of A-Z a-z 0-9 _ -",
                           PA_SNAPSHOT_NAME_MAX);
  if (c->dataset.ticks < 1 || c->dataset.ticks > 100000000)
    return pa_sim_int_fail(r, PA_ERR_INVALID_ACTION_SHAPE,
                           "ticks must be in [1, 100000000]");
  pa_sim_rec *rec = calloc(1, sizeof *rec);
  if (!rec)
    return pa_sim_int_fail(r, PA_ERR_BUSY, "out of memory");
  snprintf(rec->dir, sizeof rec->dir, "%s/%s", m->def.dataset_dir, c->name);
  if (mkdir(rec->dir, 0755) != 0) {
    pa_status st = pa_sim_int_fail(
        r, PA_ERR_INVALID_MESSAGE, "%.40s: %s", c->name,
        errno == EEXIST ? "exists already" : strerror(errno));
    free(rec);
    return st;
  }
  char err[256], yaml[sizeof rec->dir + 16], png[sizeof rec->dir + 16];
  snprintf(yaml, sizeof yaml, "%s/map.yaml", rec->dir);
  snprintf(png, sizeof png, "%s/map.png", rec->dir);
  FILE *robots = NULL;
  if (pa_map_save(&m->grid, yaml, png, err, sizeof err) != 0 ||
      !(robots = open_in(rec->dir, "robots.csv", err, sizeof err)) ||
      !(rec->poses = open_in(rec->dir, "poses.csv", err, sizeof err)) ||
      !(rec->scans = open_in(rec->dir, "scans.csv", err, sizeof err))) {
    pa_warn("export_dataset %s: %s", c->name, err);
    close_ok(robots);
    rec_unlink(rec->dir);
    rec_free(rec);
    return pa_sim_int_fail(r, PA_ERR_INVALID_MESSAGE, "%.90s", err);
  }
  fprintf(robots, "id,name,drive,radius,laser_beams,laser_range_min,"
                  "laser_range_max,laser_noise\n");
  for (uint32_t i = 0; i < s->robot_count; i++) {
    const pa_robot_info *ri = &s->info[i];
    if (!ri->active)
      continue;
    fprintf(robots, "%u,", i);
    csv_name(robots, ri->name);
    fprintf(robots, ",%s,%.9g,%u,%.9g,%.9g,%.9g\n",
            ri->drive == PA_DRIVE_OMNI ? "omni" : "diff", (double)ri->radius,
            ri->laser_beams, (double)ri->laser_range_min,
            (double)ri->laser_range_max, (double)ri->laser_noise);
  }
  if (!close_ok(robots)) {
    pa_warn("export_dataset %s: writing robots.csv failed", c->name);
    rec_unlink(rec->dir);
    rec_free(rec);
    return pa_sim_int_fail(r, PA_ERR_INVALID_MESSAGE,
                           "writing robots.csv failed");
  }
  fprintf(rec->poses, "tick,sim_time,robot,x,y,theta,odom_x,odom_y,"
                      "odom_theta,v,vy,w\n");
  fprintf(rec->scans, "tick,sim_time,robot,seq,x,y,theta,angle_min,"
                      "angle_increment,range_min,range_max,count,ranges...\n");
  rec->first_tick = s->tick + 1;
  rec->end_tick = s->tick + c->dataset.ticks;
  rec->last_tick = s->tick;
  s->rec = rec;
  pa_info("export_dataset: recording ticks %llu..%llu into %s",
          (unsigned long long)rec->first_tick,
          (unsigned long long)rec->end_tick, rec->dir);
  r->dataset.first_tick = rec->first_tick;
  r->dataset.last_tick = rec->end_tick;
  return PA_OK;
}

void pa_sim_int_rec_tick(pa_sim_state *s) {
  pa_sim_rec *rec = s->rec;
  if (!rec || s->tick <= rec->last_tick || s->tick > rec->end_tick)
    return;
  rec->last_tick = s->tick;
  for (uint32_t i = 0; i < s->robot_count; i++) {
    const pa_robot_state *p = &s->rs[i];
    if (!s->info[i].active)
      continue;
    fprintf(rec->poses,
            "%llu,%.9g,%u,%.9g,%.9g,%.9g,%.9g,%.9g,%.9g,%.9g,%.9g,%.9g\n",
            (unsigned long long)s->tick, s->sim_time, i, p->x, p->y, p->theta,
            p->odom_x, p->odom_y, p->odom_theta, p->v, p->vy, p->w);
    rec->rows++;
  }
}

void pa_sim_int_rec_scan(pa_sim_rec *rec, const pa_scan *h,
                         const float *ranges) {
  if (!rec || h->tick < rec->first_tick || h->tick > rec->end_tick)
    return;
  fprintf(rec->scans, "%llu,%.9g,%u,%u,%.9g,%.9g,%.9g,%.9g,%.9g,%.9g,%.9g,%u",
          (unsigned long long)h->tick, h->sim_time, h->robot, h->seq, h->x,
          h->y, h->theta, (double)h->angle_min, (double)h->angle_increment,
          (double)h->range_min, (double)h->range_max, h->count);
  for (uint32_t i = 0; i < h->count; i++)
    fprintf(rec->scans, ",%.7g", (double)ranges[i]);
  fputc('\n', rec->scans);
  rec->scan_rows++;
}

bool pa_sim_int_rec_due(const pa_sim_state *s) {
  return s->rec && s->tick >= s->rec->end_tick;
}

void pa_sim_rec_stop(pa_sim_state *s) {
  pa_sim_rec *rec = s->rec;
  if (!rec)
    return;
  char dir[sizeof rec->dir];
  snprintf(dir, sizeof dir, "%s", rec->dir);
  uint64_t first = rec->first_tick, last = rec->last_tick;
  unsigned long long rows = rec->rows, scans = rec->scan_rows;
  s->rec = NULL;
  if (rec_free(rec))
    pa_info("export_dataset: %s closed (ticks %llu..%llu, %llu pose rows, "
            "%llu scans)",
            dir, (unsigned long long)first, (unsigned long long)last, rows,
            scans);
  else
    pa_error("export_dataset: %s is incomplete: a write failed (disk full?)",
             dir);
}
