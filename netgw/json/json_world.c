/* json_world.c - JSON actions on the world: obstacles, maps, the terrain
 * grid, scenarios, snapshots, datasets and navigation drawings. */
#define _GNU_SOURCE
#include "json_int.h"
#include "pa_map.h"
#include "pa_props.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

size_t pa_json_cost_list_obstacles(jctx *x) {
  return (size_t)x->c->g->ctl->def.max_obstacles * 256 + PA_JSON_SMALL_REPLY;
}

json_t *pa_json_act_list_obstacles(jctx *x) {
  uint32_t n = 0;
  pa_obstacle_info *copy = pa_json_obstacles_copy(x, &n);
  if (!copy)
    return NULL;
  json_t *list = json_array();
  for (uint32_t i = 0; i < n; i++) {
    const pa_obstacle_info *o = &copy[i];
    if (!o->active)
      continue;
    json_t *j = json_object();
    json_object_set_new(
        j, "name", json_stringn(o->name, strnlen(o->name, sizeof o->name)));
    json_object_set_new(j, "shape", pa_json_shape(o));
    json_object_set_new(j, "pose", pa_json_vec3(o->x, o->y, o->theta));
    pa_json_extent(j, o);
    json_object_set_new(j, "height", json_real(o->height));
    json_array_append_new(list, j);
  }
  free(copy);
  return pa_json_counted("obstacles", list);
}

json_t *pa_json_act_spawn_obstacle(jctx *x) {
  const char *name = NULL, *shape = NULL;
  double p[3] = {0, 0, 0}, size[2] = {0, 0}, radius = 0, height = 0;
  size_t n;
  if (pa_json_need_str(x, "name", 32, &name) < 0 ||
      pa_json_str(x, "shape", 8, &shape) < 0 || pa_json_need_pose3(x, p) < 0 ||
      pa_json_vec(x, "size", 2, 0, size, &n) < 0 ||
      pa_json_num(x, "radius", &radius) < 0 ||
      pa_json_num(x, "height", &height) < 0)
    return NULL;
  char rg[64];
  pa_cmd cmd;
  memset(&cmd, 0, sizeof cmd);
  cmd.op = PA_OP_SPAWN_OBSTACLE;
  if (!shape || !strcmp(shape, "box")) {
    if (!pa_prop_ok(PA_PR_OB_SIZE, size[0]) ||
        !pa_prop_ok(PA_PR_OB_SIZE, size[1]))
      return pa_json_fail(x, PA_ERR_INVALID_ACTION_SHAPE,
                          "a box needs data.size [size_x, size_y], each in %s",
                          pa_prop_range(PA_PR_OB_SIZE, rg, sizeof rg));
    cmd.spawn_obstacle.shape = PA_SHAPE_BOX;
    cmd.spawn_obstacle.size_x = size[0];
    cmd.spawn_obstacle.size_y = size[1];
  } else if (!strcmp(shape, "circle")) {
    if (!pa_prop_ok(PA_PR_OB_RADIUS, radius))
      return pa_json_fail(x, PA_ERR_INVALID_ACTION_SHAPE,
                          "a circle needs data.radius in %s",
                          pa_prop_range(PA_PR_OB_RADIUS, rg, sizeof rg));
    cmd.spawn_obstacle.shape = PA_SHAPE_CIRCLE;
    cmd.spawn_obstacle.radius = radius;
  } else {
    return pa_json_fail(x, PA_ERR_INVALID_MESSAGE,
                        "data.shape '%s' is not box or circle", shape);
  }
  if (height != 0 && !pa_prop_ok(PA_PR_OB_HEIGHT, height))
    return pa_json_fail(x, PA_ERR_INVALID_MESSAGE,
                        "data.height %g is out of range %s (0 = default)",
                        height, pa_prop_range(PA_PR_OB_HEIGHT, rg, sizeof rg));
  snprintf(cmd.name, sizeof cmd.name, "%s", name);
  cmd.spawn_obstacle.x = p[0];
  cmd.spawn_obstacle.y = p[1];
  cmd.spawn_obstacle.theta = p[2];
  cmd.spawn_obstacle.height = height;
  return pa_json_wait_for_sim(x, &cmd, 0);
}

/* Op op for pa-sim with path (NULL: the built-in one). */
static json_t *path_op(jctx *x, uint32_t op, const char *path) {
  pa_cmd cmd;
  memset(&cmd, 0, sizeof cmd);
  cmd.op = op;
  if (path)
    snprintf(cmd.path, sizeof cmd.path, "%s", path);
  return pa_json_wait_for_sim(x, &cmd, 0);
}

/* set_map {"map_yaml": "maps/x.yaml"} or {"map": "default"}; pa-sim reads
 * the file under its --data_dir (a relative path is relative to it) and
 * refuses anything outside by name. */
json_t *pa_json_act_set_map(jctx *x) {
  const char *path = NULL, *name = NULL;
  if (pa_json_str(x, "map_yaml", PA_CMD_PATH_MAX, &path) < 0 ||
      pa_json_str(x, "map", 16, &name) < 0)
    return NULL;
  if (!path == !name)
    return pa_json_fail(x, PA_ERR_INVALID_MESSAGE,
                        "give data.map_yaml (a map_server YAML under "
                        "pa-sim's --data_dir) or data.map \"default\"");
  if (name && strcmp(name, "default"))
    return pa_json_fail(x, PA_ERR_INVALID_MESSAGE,
                        "data.map '%s': the only built-in map is \"default\"",
                        name);
  return path_op(x, PA_OP_SET_MAP, path);
}

/* set_nav_path {robot, path: [[x, y], ...]}, set_waypoints {robot,
 * waypoints: [...]}: a drawing for the viewer, kept in shared memory until
 * replaced or cleared (an empty list clears that part). clear_nav {robot}
 * clears a robot's, without robot every robot's. */
/* Removes robot idx's drawings (a removed robot's must not pass to the next
 * robot in its slot). */
void pa_json_nav_clear_robot(pa_netgw *g, uint32_t idx) {
  pa_nav_block *nb = g->st->nav;
  for (int i = 0; i < PA_NAV_OVERLAYS; i++)
    if (nb->ov[i].robot == idx) {
      pa_stack_nav_begin(g->st);
      nb->ov[i].robot = UINT32_MAX;
      nb->ov[i].path_n = nb->ov[i].wp_n = 0;
      nb->ov[i].goal_n = nb->ov[i].pred_n = 0;
      pa_stack_nav_end(g->st);
    }
}

/* Empties overlay o (its slot stays taken until the caller frees it). */
static void nav_empty(pa_nav_overlay *o) {
  o->path_n = o->wp_n = o->goal_n = o->pred_n = 0;
}

json_t *pa_json_nav(jctx *x, int mode) {
  pa_netgw *g = x->c->g;
  pa_nav_block *nb = g->st->nav;
  bool all =
      mode == NAV_CLEAR && (!json_object_get(x->data, "robot") ||
                            json_is_null(json_object_get(x->data, "robot")));
  pa_robot_info info;
  uint32_t idx = UINT32_MAX;
  if (!all && pa_json_robot(x, &info, &idx) < 0)
    return NULL;
  static const char *const keys[] = {"path", "waypoints", "", "waypoint",
                                     "trajectory"};
  const char *key = keys[mode];
  uint32_t max = mode == NAV_WAYPOINTS ? PA_NAV_WAYPOINTS_MAX
                 : mode == NAV_GOAL    ? 1
                                       : PA_NAV_PATH_MAX;
  float pts[PA_NAV_PATH_MAX][2];
  uint32_t n = 0;
  json_t *one = NULL; /* set_waypoint's [x, y] taken as a list of one */
  if (mode == NAV_GOAL) {
    json_t *w = json_object_get(x->data, "waypoint");
    if (!json_is_array(w) || (json_array_size(w) != 2 && json_array_size(w)))
      return pa_json_fail(x, PA_ERR_INVALID_ACTION_SHAPE,
                          "data.waypoint must be [x, y] ([] clears it)");
    one = json_array();
    if (json_array_size(w))
      json_array_append(one, w);
  }
  if (mode != NAV_CLEAR) {
    json_t *v = one ? one : json_object_get(x->data, key);
    if (!json_is_array(v) || json_array_size(v) > max)
      return pa_json_fail(
          x, PA_ERR_INVALID_ACTION_SHAPE,
          "data.%s must be an array of at most %u [x, y] points", key, max);
    for (size_t i = 0; i < json_array_size(v); i++) {
      json_t *p = json_array_get(v, i);
      double xy[2];
      for (int k = 0; k < 2; k++) {
        json_t *c = json_array_get(p, (size_t)k);
        xy[k] = json_is_number(c) ? json_number_value(c) : NAN;
      }
      if (!json_is_array(p) || json_array_size(p) != 2 || !isfinite(xy[0]) ||
          !isfinite(xy[1]) || fabs(xy[0]) > 1e6 || fabs(xy[1]) > 1e6) {
        json_decref(one);
        if (mode == NAV_GOAL)
          return pa_json_fail(x, PA_ERR_INVALID_ACTION_SHAPE,
                              "data.waypoint must be [x, y], finite numbers");
        return pa_json_fail(x, PA_ERR_INVALID_ACTION_SHAPE,
                            "data.%s[%zu] must be [x, y], finite numbers", key,
                            i);
      }
      pts[n][0] = (float)xy[0];
      pts[n][1] = (float)xy[1];
      n++;
    }
  }
  json_decref(one);
  /* The robot's slot, or a free one (a full table: the reply says so). */
  int slot = -1, free_slot = -1;
  for (int i = 0; i < PA_NAV_OVERLAYS; i++) {
    if (nb->ov[i].robot == idx)
      slot = i;
    else if (nb->ov[i].robot == UINT32_MAX && free_slot < 0)
      free_slot = i;
  }
  if (!all && slot < 0 && mode != NAV_CLEAR && n > 0) {
    if (free_slot < 0)
      return pa_json_fail(
          x, PA_ERR_BUSY,
          "%d robots have drawings already: clear_nav one first",
          PA_NAV_OVERLAYS);
    slot = free_slot;
  }
  pa_stack_nav_begin(g->st);
  if (all) {
    for (int i = 0; i < PA_NAV_OVERLAYS; i++)
      nb->ov[i].robot = UINT32_MAX, nav_empty(&nb->ov[i]);
  } else if (slot >= 0) {
    pa_nav_overlay *o = &nb->ov[slot];
    if (o->robot != idx) {
      o->robot = idx;
      nav_empty(o);
    }
    if (mode == NAV_CLEAR) {
      nav_empty(o);
    } else if (mode == NAV_PATH) {
      memcpy(o->path, pts, n * sizeof pts[0]);
      o->path_n = n;
    } else if (mode == NAV_WAYPOINTS) {
      memcpy(o->wp, pts, n * sizeof pts[0]);
      o->wp_n = n;
    } else if (mode == NAV_GOAL) {
      memcpy(o->goal, pts[0], sizeof o->goal);
      o->goal_n = n;
    } else {
      memcpy(o->pred, pts, n * sizeof pts[0]);
      o->pred_n = n;
    }
    if (!o->path_n && !o->wp_n && !o->goal_n && !o->pred_n)
      o->robot = UINT32_MAX; /* nothing left to draw: the slot is free */
  }
  pa_stack_nav_end(g->st);
  json_t *d = json_object();
  if (!all)
    json_object_set_new(d, "robot", json_integer(idx));
  if (mode != NAV_CLEAR)
    json_object_set_new(d, "points", json_integer(n));
  return d;
}

json_t *pa_json_act_set_nav_path(jctx *x) { return pa_json_nav(x, NAV_PATH); }
json_t *pa_json_act_set_waypoints(jctx *x) {
  return pa_json_nav(x, NAV_WAYPOINTS);
}
json_t *pa_json_act_clear_nav(jctx *x) { return pa_json_nav(x, NAV_CLEAR); }

/* set_scenario {"world": "/abs/x.world.yaml" | "default"}: robots,
 * obstacles and map from a world file (pa-sim reads it). */
json_t *pa_json_act_set_scenario(jctx *x) {
  const char *path = NULL;
  if (json_object_get(x->data, "scenario")) /* a built-in, by name */
    return pa_json_set_scenario_named(x);
  if (json_object_get(x->data, "seed"))
    return pa_json_fail(x, PA_ERR_INVALID_MESSAGE,
                        "data.seed goes with data.scenario (see "
                        "list_scenarios)");
  if (!json_object_get(x->data, "world"))
    return pa_json_fail(x, PA_ERR_INVALID_MESSAGE,
                        "give data.scenario (a built-in: list_scenarios) or "
                        "data.world (a world file)");
  if (pa_json_need_str(x, "world", PA_CMD_PATH_MAX, &path) < 0)
    return NULL;
  bool dflt = !strcmp(path, "default");
  return path_op(x, PA_OP_SET_SCENARIO, dflt ? NULL : path);
}

/* generate_map {width, height, resolution, seed, rooms: [x, y], clutter}:
 * checked here for a clear error before the sim builds it. */
json_t *pa_json_act_generate_map(jctx *x) {
  pa_mapgen p = pa_mapgen_default();
  long long seed = (long long)p.seed, clutter = p.clutter;
  double rooms[2] = {p.rooms_x, p.rooms_y};
  size_t nr = 0;
  if (pa_json_num(x, "width", &p.width) < 0 ||
      pa_json_num(x, "height", &p.height) < 0 ||
      pa_json_num(x, "resolution", &p.resolution) < 0 ||
      pa_json_int(x, "seed", 0, 9007199254740991ll, &seed) < 0 ||
      pa_json_int(x, "clutter", 0, 64, &clutter) < 0 ||
      pa_json_vec(x, "rooms", 2, 0, rooms, &nr) < 0)
    return NULL;
  for (int i = 0; i < 2; i++)
    if (rooms[i] != floor(rooms[i]) || rooms[i] < 1 || rooms[i] > 32)
      return pa_json_fail(x, PA_ERR_INVALID_MESSAGE,
                          "data.rooms must be two whole numbers in [1, 32]");
  p.seed = (uint64_t)seed;
  p.clutter = (uint32_t)clutter;
  p.rooms_x = (uint32_t)rooms[0];
  p.rooms_y = (uint32_t)rooms[1];
  char err[160];
  if (pa_mapgen_check(&p, err, sizeof err) != 0)
    return pa_json_fail(x, PA_ERR_INVALID_MESSAGE, "%s", err);
  pa_cmd cmd;
  memset(&cmd, 0, sizeof cmd);
  cmd.op = PA_OP_GENERATE_MAP;
  cmd.gen_map.width = p.width;
  cmd.gen_map.height = p.height;
  cmd.gen_map.resolution = p.resolution;
  cmd.gen_map.seed = (double)p.seed;
  cmd.gen_map.rooms_x = p.rooms_x;
  cmd.gen_map.rooms_y = p.rooms_y;
  cmd.gen_map.clutter = p.clutter;
  return pa_json_wait_for_sim(x, &cmd, 0);
}

/* save_snapshot / load_snapshot: data.name. */
static json_t *snapshot(jctx *x, uint32_t op) {
  const char *name = NULL;
  if (pa_json_need_str(x, "name", 64, &name) < 0)
    return NULL;
  if (!pa_snapshot_name_ok(name))
    return pa_json_fail(x, PA_ERR_INVALID_MESSAGE,
                        "snapshot name '%s': use 1 to %d of A-Z a-z 0-9 _ -",
                        name, PA_SNAPSHOT_NAME_MAX);
  pa_cmd cmd;
  memset(&cmd, 0, sizeof cmd);
  cmd.op = op;
  snprintf(cmd.name, sizeof cmd.name, "%s", name);
  return pa_json_wait_for_sim(x, &cmd, 0);
}

json_t *pa_json_act_save_snapshot(jctx *x) {
  return snapshot(x, PA_OP_SAVE_SNAPSHOT);
}
json_t *pa_json_act_load_snapshot(jctx *x) {
  return snapshot(x, PA_OP_LOAD_SNAPSHOT);
}

/* The map pa-sim published: 0, or -1 (busy: none yet). */
static int published_map(jctx *x, const pa_map_block **m,
                         const int8_t **cells) {
  if (pa_gw_map(x->c->g, m, cells) == 0)
    return 0;
  pa_json_fail(x, PA_ERR_BUSY, "the simulator has not published a map yet");
  return -1;
}

json_t *pa_json_act_get_map_info(jctx *x) {
  const pa_map_block *m;
  const int8_t *cells;
  if (published_map(x, &m, &cells) < 0)
    return NULL;
  json_t *d = json_object();
  json_object_set_new(d, "width", json_integer(m->width));
  json_object_set_new(d, "height", json_integer(m->height));
  json_object_set_new(d, "resolution", json_real(m->resolution));
  json_object_set_new(d, "origin",
                      pa_json_vec3(m->origin_x, m->origin_y, m->origin_yaw));
  json_object_set_new(
      d, "size",
      pa_json_vec3(m->width * m->resolution, m->height * m->resolution, 0));
  json_array_remove(json_object_get(d, "size"), 2);
  json_object_set_new(d, "gen", json_integer(m->gen));
  /* occupied: what blocks in pa-sim (100 in trinary and scale maps) */
  int8_t occ_min = pa_map_block_occupied_min(m);
  uint64_t occ = 0, unk = 0, total = (uint64_t)m->width * m->height;
  for (uint64_t i = 0; i < total; i++) {
    if (cells[i] < 0)
      unk++;
    else if (cells[i] >= occ_min)
      occ++;
  }
  json_object_set_new(d, "occupied_cells", json_integer((json_int_t)occ));
  json_object_set_new(d, "unknown_cells", json_integer((json_int_t)unk));
  return d;
}

#define TERRAIN_MAX_CELLS (2u << 20) /* keeps the reply near 2 MB */

/* The rows' bytes: one character per coarse cell plus quotes and comma per
 * row (a bad request costs nothing: the handler refuses it). */
size_t pa_json_cost_get_terrain_grid(jctx *x) {
  const pa_map_block *m;
  const int8_t *cells;
  if (pa_json_terrain_is_oceansim(x))
    return pa_json_cost_terrain_oceansim(x);
  json_t *v = json_object_get(x->data, "stride");
  json_int_t stride = json_is_integer(v) ? json_integer_value(v) : 1;
  if (pa_gw_map(x->c->g, &m, &cells) != 0 || stride < 1 || stride > 64)
    return PA_JSON_SMALL_REPLY;
  uint64_t ow = (m->width + (uint64_t)stride - 1) / (uint64_t)stride;
  uint64_t oh = (m->height + (uint64_t)stride - 1) / (uint64_t)stride;
  if (ow * oh > TERRAIN_MAX_CELLS)
    return PA_JSON_SMALL_REPLY;
  return (size_t)((ow + 3) * oh) + PA_JSON_SMALL_REPLY;
}

/* Occupancy for planners: cells within `inflation` metres of a blocked cell
 * are blocked too (exact distance transform), optionally downsampled. */
json_t *pa_json_act_get_terrain_grid(jctx *x) {
  const pa_map_block *m;
  const int8_t *cells;
  if (pa_json_terrain_is_oceansim(x)) /* OceanSim's keys: json_terrain.c */
    return pa_json_terrain_oceansim(x);
  if (published_map(x, &m, &cells) < 0)
    return NULL;
  double inflation = 0;
  /* by default what blocks in pa-sim */
  long long stride = 1, threshold = pa_map_block_occupied_min(m);
  json_t *ub = json_object_get(x->data, "unknown_blocks");
  if (pa_json_num(x, "inflation", &inflation) < 0 ||
      pa_json_int(x, "stride", 1, 64, &stride) < 0 ||
      pa_json_int(x, "threshold", 1, 100, &threshold) < 0)
    return NULL;
  if (ub && !json_is_boolean(ub))
    return pa_json_fail(x, PA_ERR_INVALID_ACTION_SHAPE,
                        "data.unknown_blocks must be true "
                        "or false");
  if (inflation < 0 || inflation > 100)
    return pa_json_fail(x, PA_ERR_INVALID_MESSAGE,
                        "data.inflation %g is out of range [0, 100] m",
                        inflation);
  bool unknown_blocks = ub && json_is_true(ub);
  uint32_t ow = (m->width + (uint32_t)stride - 1) / (uint32_t)stride;
  uint32_t oh = (m->height + (uint32_t)stride - 1) / (uint32_t)stride;
  if ((uint64_t)ow * oh > TERRAIN_MAX_CELLS)
    return pa_json_fail(x, PA_ERR_INVALID_MESSAGE,
                        "the grid would have %llu cells (limit %u): ask with a "
                        "larger data.stride",
                        (unsigned long long)ow * oh, TERRAIN_MAX_CELLS);
  pa_grid grid;
  memset(&grid, 0, sizeof grid);
  grid.width = m->width;
  grid.height = m->height;
  grid.resolution = m->resolution;
  grid.origin_x = m->origin_x;
  grid.origin_y = m->origin_y;
  grid.origin_yaw = m->origin_yaw;
  grid.cells = (int8_t *)cells; /* read only: pa_dist_build takes const */
  grid.occupied_min = (int8_t)threshold;
  pa_dist dist;
  memset(&dist, 0, sizeof dist);
  char err[128];
  if (inflation > 0 &&
      pa_dist_build(&grid, unknown_blocks, &dist, err, sizeof err) != 0)
    return pa_json_fail(x, PA_ERR_BUSY, "distance transform failed: %s", err);
  json_t *rows = json_array();
  char *row = malloc((size_t)ow + 1);
  if (!row) {
    pa_dist_free(&dist);
    json_decref(rows);
    return pa_json_fail(x, PA_ERR_BUSY, "out of memory");
  }
  uint64_t blocked_n = 0;
  for (uint32_t oy = 0; oy < oh; oy++) {
    for (uint32_t ox = 0; ox < ow; ox++) {
      char ch = '.';
      for (uint32_t y = oy * (uint32_t)stride;
           y < (oy + 1) * (uint32_t)stride && y < m->height && ch != '#'; y++)
        for (uint32_t cx = ox * (uint32_t)stride;
             cx < (ox + 1) * (uint32_t)stride && cx < m->width; cx++) {
          size_t i = (size_t)y * m->width + cx;
          int8_t v = cells[i];
          bool blocked = v >= threshold || (v < 0 && unknown_blocks) ||
                         (inflation > 0 && dist.d[i] <= inflation);
          if (blocked) {
            ch = '#';
            break;
          }
          if (v < 0)
            ch = '?';
        }
      blocked_n += ch == '#';
      row[ox] = ch;
    }
    json_array_append_new(rows, json_stringn(row, ow));
  }
  free(row);
  pa_dist_free(&dist);
  json_t *d = json_object();
  json_object_set_new(d, "width", json_integer(ow));
  json_object_set_new(d, "height", json_integer(oh));
  json_object_set_new(d, "resolution",
                      json_real(m->resolution * (double)stride));
  json_object_set_new(d, "origin",
                      pa_json_vec3(m->origin_x, m->origin_y, m->origin_yaw));
  json_object_set_new(d, "inflation", json_real(inflation));
  json_object_set_new(d, "threshold", json_integer(threshold));
  json_object_set_new(d, "stride", json_integer(stride));
  json_object_set_new(d, "gen", json_integer(m->gen));
  json_object_set_new(d, "blocked_cells", json_integer((json_int_t)blocked_n));
  json_object_set_new(d, "encoding",
                      json_string("rows: row 0 = south edge, "
                                  "'.' free, '#' blocked, '?' "
                                  "unknown"));
  json_object_set_new(d, "rows", rows);
  return d;
}

json_t *pa_json_act_remove_obstacle(jctx *x) {
  const char *name = NULL;
  pa_obstacle_info ob;
  uint32_t idx;
  if (pa_json_need_str(x, "name", 32, &name) < 0)
    return NULL;
  int rc = pa_gw_obstacle(x->c->g, name, &ob, &idx);
  if (rc != 0) {
    if (!pa_json_lookup_busy(x, rc))
      pa_json_fail(x, PA_ERR_UNKNOWN_OBJECT, "no obstacle named '%s'", name);
    return NULL;
  }
  pa_cmd cmd;
  memset(&cmd, 0, sizeof cmd);
  cmd.op = PA_OP_REMOVE_OBSTACLE;
  snprintf(cmd.name, sizeof cmd.name, "%s", name);
  return pa_json_wait_for_sim(x, &cmd, 0);
}

json_t *pa_json_done_snapshot(jctx *x, const pa_reply *r) {
  json_t *d = pa_json_tick(r);
  json_object_set(d, "name", json_object_get(x->data, "name"));
  json_object_set_new(d, "robots", json_integer(r->snapshot.robots));
  json_object_set_new(d, "obstacles", json_integer(r->snapshot.obstacles));
  json_object_set_new(d, "saved_tick",
                      json_integer((json_int_t)r->snapshot.tick));
  json_object_set_new(d, "saved_sim_time", json_real(r->snapshot.sim_time));
  return d;
}

json_t *pa_json_done_map(jctx *x, const pa_reply *r) {
  (void)x;
  json_t *d = pa_json_tick(r);
  json_object_set_new(d, "width", json_integer(r->map.width));
  json_object_set_new(d, "height", json_integer(r->map.height));
  json_object_set_new(d, "resolution", json_real(r->map.resolution));
  json_t *o = json_array();
  json_array_append_new(o, json_real(r->map.origin_x));
  json_array_append_new(o, json_real(r->map.origin_y));
  json_object_set_new(d, "origin", o);
  json_object_set_new(d, "robots_moved", json_integer(r->map.moved));
  return d;
}

json_t *pa_json_done_set_scenario(jctx *x, const pa_reply *r) {
  json_t *d = pa_json_done_map(x, r);
  json_object_set_new(d, "robots", json_integer(r->map.robots));
  json_object_set_new(d, "obstacles", json_integer(r->map.obstacles));
  pa_json_scenario_reply(x, d);
  return d;
}
