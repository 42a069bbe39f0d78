/* sim_saveworld.c - save_world: the world as it stands (robots at their
 * current poses with their properties, obstacles, the map) as a world YAML
 * that --world and set_scenario load (docs/world-format.md), under
 * --data_dir; the map is written beside it as <stem>.map.yaml + .png. */
#define _GNU_SOURCE
#include "pa_props.h"
#include "pa_sim.h"
#include "sim_int.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* Row i's value in rec as the world file writes it (floats to the digits
 * that read back to the same float). */
static void value(FILE *f, int i, const void *rec) {
  const pa_prop_def *p = pa_prop((pa_prop_row)i);
  double v = pa_prop_get((pa_prop_row)i, rec, 0);
  switch (p->type) {
  case PA_PT_SIZE:
    fprintf(f, "[%.17g, %.17g]", v, pa_prop_get((pa_prop_row)i, rec, 1));
    break;
  case PA_PT_COLOUR:
    fprintf(f, "[%.0f, %.0f, %.0f, %.0f]", v,
            pa_prop_get((pa_prop_row)i, rec, 1),
            pa_prop_get((pa_prop_row)i, rec, 2),
            pa_prop_get((pa_prop_row)i, rec, 3));
    break;
  case PA_PT_WORD:
    fprintf(f, "%s", pa_prop_word_name((pa_prop_row)i, (int)v));
    break;
  case PA_PT_INT:
    fprintf(f, "%.0f", v);
    break;
  default:
    fprintf(f, p->store == PA_ST_F32 && p->scale == 1 ? "%.9g" : "%.17g", v);
    break;
  }
}

/* The rows of kind in section sec ("" = the body's own keys, one a line at
 * indent; else "key: value, " pairs of a flow mapping). */
static void rows_out(FILE *f, const void *rec, unsigned kind, const char *sec,
                     const char *indent) {
  uint32_t shape = kind == PA_PK_OBSTACLE
                       ? ((const pa_obstacle_info *)rec)->shape
                       : PA_SHAPE_BOX;
  size_t sl = strlen(sec);
  bool first = true;
  for (int i = 0; i < PA_PR_COUNT; i++) {
    const pa_prop_def *p = pa_prop((pa_prop_row)i);
    const char *dot = p->path ? strchr(p->path, '.') : NULL;
    if (!p->path || !(p->kinds & kind) ||
        !pa_prop_applies((pa_prop_row)i, shape) ||
        (sl ? !dot || (size_t)(dot - p->path) != sl || strncmp(p->path, sec, sl)
            : dot != NULL))
      continue;
    if (sl)
      fprintf(f, "%s%s: ", first ? "" : ", ", dot + 1);
    else
      fprintf(f, "%s%s: ", indent, p->path);
    value(f, i, rec);
    if (!sl)
      fprintf(f, "\n");
    first = false;
  }
}

static void robot(FILE *f, const pa_robot_info *ri, const pa_robot_state *rs) {
  fprintf(f, "  - name: \"%s\"\n", ri->name);
  fprintf(f, "    pose: [%.17g, %.17g, %.17g]\n", rs->x, rs->y, rs->theta);
  fprintf(f, "    drive: %s\n",
          ri->drive == PA_DRIVE_OMNI ? "omni" : "differential");
  rows_out(f, ri, PA_PK_ROBOT, "", "    ");
  /* each section the rows name, once, in the rows' order */
  for (int i = 0; i < PA_PR_COUNT; i++) {
    const pa_prop_def *p = pa_prop((pa_prop_row)i);
    const char *dot = p->path ? strchr(p->path, '.') : NULL;
    char sec[32];
    if (!dot || !(p->kinds & PA_PK_ROBOT) ||
        (size_t)(dot - p->path) >= sizeof sec)
      continue;
    snprintf(sec, sizeof sec, "%.*s", (int)(dot - p->path), p->path);
    bool seen = false;
    for (int j = 0; j < i && !seen; j++) {
      const char *pj = pa_prop((pa_prop_row)j)->path;
      seen = (pa_prop((pa_prop_row)j)->kinds & PA_PK_ROBOT) && pj &&
             !strncmp(pj, sec, strlen(sec)) && pj[strlen(sec)] == '.';
    }
    if (seen)
      continue;
    fprintf(f, "    %s: {", sec);
    rows_out(f, ri, PA_PK_ROBOT, sec, "");
    if (!strcmp(sec, "dynamics")) {
      fprintf(f, ", thrusters: [");
      for (uint32_t k = 0; k < ri->thruster_count && k < PA_THRUSTERS_MAX;
           k++) {
        const pa_thruster *t = &ri->thrusters[k];
        fprintf(f,
                "%s{name: \"%s\", position: [%.9g, %.9g], direction: %.9g, "
                "max_force: %.9g}",
                k ? ", " : "", t->name, (double)t->x, (double)t->y,
                (double)t->dir, (double)t->max_force);
      }
      fprintf(f, "]");
    }
    fprintf(f, "}\n");
  }
}

static void obstacle(FILE *f, const pa_obstacle_info *o) {
  fprintf(f,
          "  - name: \"%s\"\n    shape: %s\n    pose: [%.17g, %.17g, %.17g]\n",
          o->name, o->shape == PA_SHAPE_CIRCLE ? "circle" : "box", o->x, o->y,
          o->theta);
  rows_out(f, o, PA_PK_OBSTACLE, "", "    ");
}

/* An agent: its obstacle, then its behaviour, speed and waypoints (those
 * of its record; none when it has no record and stands). */
static void agent(FILE *f, const pa_obstacle_info *o, const pa_sim_agent *a) {
  static const char *const beh[] = {"constant", "waypoints", "random",
                                    "pedestrian"};
  bool rec = a && a->gen == o->gen;
  obstacle(f, o);
  fprintf(f, "    behaviour: %s\n    speed: %.17g\n    waypoints: [",
          beh[(o->agent - 1) % 4], rec ? a->speed : 0.0);
  for (uint32_t k = 0; rec && k < a->wp_count && k < PA_AGENT_WAYPOINTS_MAX;
       k++)
    fprintf(f, "%s[%.17g, %.17g]", k ? ", " : "", a->wpx[k], a->wpy[k]);
  fprintf(f, "]\n");
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
    if (s->obs[i].active && s->obs[i].agent == PA_AGENT_NONE) {
      obstacle(f, &s->obs[i]);
      no++;
    }
  if (!no)
    fprintf(f, "  []\n");
  fprintf(f, "agents:\n");
  uint32_t na = 0;
  for (uint32_t i = 0; i < s->obstacle_count; i++)
    if (s->obs[i].active && s->obs[i].agent != PA_AGENT_NONE) {
      agent(f, &s->obs[i], s->agents ? &s->agents[i] : NULL);
      na++;
    }
  if (!na)
    fprintf(f, "  []\n");
  int e = fflush(f) != 0 || ferror(f) ? (errno ? errno : EIO) : 0;
  if (!e && fsync(fileno(f)) != 0)
    e = errno;
  if (fclose(f) != 0 && !e)
    e = errno;
  if (pa_sim_int_file_end(&fw, e, r) != 0)
    return (pa_status)r->status;
  r->snapshot.robots = nr;
  r->snapshot.obstacles = no + na; /* agents are obstacles too */
  r->snapshot.tick = s->tick;
  r->snapshot.sim_time = s->sim_time;
  return PA_OK;
}
