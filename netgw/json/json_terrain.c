/* json_terrain.c - get_terrain_grid as OceanSim's: cell_size [m],
 * inflation_radius [m], include_static_obstacles, include_dynamic_agents,
 * auv_y (the slice the grid is cut at: the planar world is the same at every
 * one) and class_grid (free / terrain / static obstacle / agent) beside the 0/1
 * grid, as arrays, or as a compact binary block for large maps. The older
 * form (stride, inflation, rows of characters) stays in json_world.c. */
#define _GNU_SOURCE
#include "json_int.h"
#include "pa_map.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* class_grid codes */
enum { C_UNKNOWN = -1, C_FREE = 0, C_TERRAIN = 1, C_STATIC = 2, C_AGENT = 3 };

#define ARRAY_MAX_CELLS (1u << 20)   /* as JSON arrays: ~4 bytes a cell */
#define BINARY_MAX_CELLS (16u << 20) /* as the binary block: 2 bytes a cell */

static const char *const oceansim_keys[] = {"cell_size",
                                            "inflation_radius",
                                            "include_static_obstacles",
                                            "include_dynamic_agents",
                                            "format",
                                            "auv_y"};

bool pa_json_terrain_is_oceansim(jctx *x) {
  for (size_t i = 0; i < sizeof oceansim_keys / sizeof oceansim_keys[0]; i++)
    if (json_object_get(x->data, oceansim_keys[i]))
      return true;
  return false;
}

/* The requested format: 0 arrays, 1 binary, -1 bad (error set). */
static int want_format(jctx *x) {
  const char *f = "arrays";
  if (pa_json_str(x, "format", 16, &f) < 0)
    return -1;
  if (!strcmp(f, "arrays"))
    return 0;
  if (!strcmp(f, "binary"))
    return 1;
  pa_json_fail(x, PA_ERR_INVALID_MESSAGE,
               "data.format '%s' is not arrays or binary", f);
  return -1;
}

typedef struct tgrid {
  double cs, infl; /* [m] cell size, inflation radius */
  double auv_y;    /* [m] OceanSim's slice coordinate: every one is the plane */
  bool statics, agents, unknown_blocks;
  int format;      /* 0 arrays, 1 binary */
  uint32_t ow, oh; /* coarse cells */
} tgrid;

/* Reads and checks the request against the map m: 0, or -1 (error set). */
static int read_req(jctx *x, const pa_map_block *m, tgrid *t) {
  t->cs = m->resolution;
  t->infl = 0;
  t->statics = true;
  t->agents = false;
  t->unknown_blocks = false;
  t->auv_y = 0;
  if (pa_json_num(x, "cell_size", &t->cs) < 0 ||
      pa_json_num(x, "auv_y", &t->auv_y) < 0 ||
      pa_json_bool(x, "unknown_blocks", &t->unknown_blocks) < 0 ||
      pa_json_num(x, "inflation_radius", &t->infl) < 0 ||
      pa_json_bool(x, "include_static_obstacles", &t->statics) < 0 ||
      pa_json_bool(x, "include_dynamic_agents", &t->agents) < 0 ||
      (t->format = want_format(x)) < 0)
    return -1;
  if (json_object_get(x->data, "stride") ||
      json_object_get(x->data, "inflation") ||
      json_object_get(x->data, "threshold")) {
    pa_json_fail(x, PA_ERR_INVALID_MESSAGE,
                 "data.stride, data.inflation and data.threshold are the older "
                 "form: use data.cell_size and data.inflation_radius with it");
    return -1;
  }
  if (!(t->cs >= m->resolution * 0.999) || t->cs > 100) {
    pa_json_fail(x, PA_ERR_INVALID_MESSAGE,
                 "data.cell_size %g is out of range [%g (the map's "
                 "resolution), 100] m",
                 t->cs, m->resolution);
    return -1;
  }
  if (t->infl < 0 || t->infl > 100) {
    pa_json_fail(x, PA_ERR_INVALID_MESSAGE,
                 "data.inflation_radius %g is out of range [0, 100] m",
                 t->infl);
    return -1;
  }
  t->ow = (uint32_t)ceil(m->width * m->resolution / t->cs - 1e-9);
  t->oh = (uint32_t)ceil(m->height * m->resolution / t->cs - 1e-9);
  uint64_t n = (uint64_t)t->ow * t->oh,
           lim = t->format ? BINARY_MAX_CELLS : ARRAY_MAX_CELLS;
  if (n > lim) {
    pa_json_fail(x, PA_ERR_INVALID_MESSAGE,
                 "the grid would have %llu cells (limit %u as %s): ask with a "
                 "larger data.cell_size%s",
                 (unsigned long long)n, (unsigned)lim,
                 t->format ? "binary" : "arrays",
                 t->format ? "" : " or data.format \"binary\"");
    return -1;
  }
  if (t->format && x->c->jbatch) {
    pa_json_fail(x, PA_ERR_INVALID_MESSAGE,
                 "a binary get_terrain_grid cannot be inside a batch");
    return -1;
  }
  return 0;
}

size_t pa_json_cost_terrain_oceansim(jctx *x) {
  const pa_map_block *m;
  const int8_t *cells;
  tgrid t;
  if (pa_gw_map(x->c->g, &m, &cells) != 0)
    return PA_JSON_SMALL_REPLY;
  jctx probe = *x; /* a bad request costs nothing: the handler refuses it */
  if (read_req(&probe, m, &t) != 0)
    return PA_JSON_SMALL_REPLY;
  size_t n = (size_t)t.ow * t.oh;
  return (t.format ? 2 * n : 5 * n + 8 * (size_t)t.oh) + PA_JSON_SMALL_REPLY;
}

/* Marks the map cells whose centre lies in obstacle o as class `as` (terrain
 * cells keep theirs). */
static void mark_obstacle(int8_t *cls, const pa_map_block *m,
                          const pa_obstacle_info *o, int8_t as) {
  double r = o->shape == PA_SHAPE_CIRCLE ? o->radius
                                         : 0.5 * hypot(o->size_x, o->size_y);
  double res = m->resolution, c = cos(m->origin_yaw), s = sin(m->origin_yaw);
  /* the obstacle's centre in map cells (the map may be rotated) */
  double mx = ((o->x - m->origin_x) * c + (o->y - m->origin_y) * s) / res;
  double my = (-(o->x - m->origin_x) * s + (o->y - m->origin_y) * c) / res;
  long r_c = (long)ceil(r / res) + 1;
  for (long y = (long)my - r_c; y <= (long)my + r_c; y++)
    for (long xx = (long)mx - r_c; xx <= (long)mx + r_c; xx++) {
      if (xx < 0 || y < 0 || xx >= (long)m->width || y >= (long)m->height)
        continue;
      /* the cell's centre in world, then in the obstacle's frame */
      double cx = (xx + 0.5) * res, cy = (y + 0.5) * res;
      double wx = m->origin_x + cx * c - cy * s - o->x;
      double wy = m->origin_y + cx * s + cy * c - o->y;
      bool in;
      if (o->shape == PA_SHAPE_CIRCLE) {
        in = wx * wx + wy * wy <= o->radius * o->radius;
      } else {
        double ct = cos(o->theta), st = sin(o->theta);
        double lx = wx * ct + wy * st, ly = -wx * st + wy * ct;
        in = fabs(lx) <= 0.5 * o->size_x && fabs(ly) <= 0.5 * o->size_y;
      }
      int8_t *p = &cls[(size_t)y * m->width + (size_t)xx];
      if (in && *p != C_TERRAIN && *p < as)
        *p = as;
    }
}

static void mark_disc(int8_t *cls, const pa_map_block *m, double x, double y,
                      double r) {
  pa_obstacle_info o;
  memset(&o, 0, sizeof o);
  o.shape = PA_SHAPE_CIRCLE;
  o.x = x, o.y = y, o.radius = r;
  mark_obstacle(cls, m, &o, C_AGENT);
}

/* The class of every map cell: terrain from the map, then obstacles and
 * robots as asked. NULL with the error set. */
static int8_t *classes(jctx *x, const pa_map_block *m, const int8_t *cells,
                       const tgrid *t) {
  pa_netgw *g = x->c->g;
  size_t n = (size_t)m->width * m->height;
  int8_t *cls = malloc(n ? n : 1);
  if (!cls) {
    pa_json_fail(x, PA_ERR_BUSY, "out of memory");
    return NULL;
  }
  int8_t occ = m->occupied_min > 0 ? (int8_t)m->occupied_min : 100;
  for (size_t i = 0; i < n; i++)
    cls[i] = cells[i] < 0 ? C_UNKNOWN : cells[i] >= occ ? C_TERRAIN : C_FREE;
  if (t->statics || t->agents) { /* obstacles, agents among them */
    uint32_t no = 0;
    pa_obstacle_info *ob = pa_json_obstacles_copy(x, &no);
    if (!ob) {
      free(cls);
      return NULL;
    }
    for (uint32_t i = 0; i < no; i++) {
      bool agent = ob[i].agent != PA_AGENT_NONE;
      if (ob[i].active && (agent ? t->agents : t->statics))
        mark_obstacle(cls, m, &ob[i], agent ? C_AGENT : C_STATIC);
    }
    free(ob);
  }
  if (t->agents) {
    /* the robots' footprints now (the agents are marked above) */
    const pa_tick *tk = pa_gw_latest(g);
    for (uint32_t i = 0; tk && i < tk->robot_count; i++) {
      const pa_robot_state *rs = pa_gw_robot_state(tk, i);
      pa_robot_info ri;
      uint32_t idx;
      if (rs && (rs->flags & PA_RS_ACTIVE) &&
          pa_gw_robot(g, NULL, (long)i, &ri, &idx) == 0)
        mark_disc(cls, m, rs->x, rs->y, ri.radius);
    }
  }
  return cls;
}

/* The distance of every map cell to the nearest blocking one (a class
 * above free, or unknown when it blocks), for the inflation: 0, or -1 with
 * the error set. */
static int inflate(jctx *x, const pa_map_block *m, const int8_t *cls,
                   const tgrid *t, pa_dist *dist) {
  size_t n = (size_t)m->width * m->height;
  int8_t *occ = malloc(n ? n : 1);
  char err[128];
  pa_grid gr = {.width = m->width,
                .height = m->height,
                .resolution = m->resolution,
                .cells = occ,
                .occupied_min = 100};
  for (size_t i = 0; occ && i < n; i++)
    occ[i] =
        cls[i] > C_FREE || (cls[i] == C_UNKNOWN && t->unknown_blocks) ? 100 : 0;
  int rc = occ ? pa_dist_build(&gr, false, dist, err, sizeof err) : -1;
  free(occ);
  if (rc != 0) {
    pa_json_fail(x, PA_ERR_BUSY, "inflation failed: %s",
                 occ ? err : "out of memory");
    return -1;
  }
  return 0;
}

/* The map's cells onto the coarse grid (blk, ocl zeroed and C_FREE): a
 * coarse cell is blocked if any cell under it is (or is within the
 * inflation radius); its class the one of highest rank. */
static void coarsen(const pa_map_block *m, const int8_t *cls, const tgrid *t,
                    const pa_dist *dist, uint8_t *blk, int8_t *ocl) {
  static const int rank[5] = {1, 0, 2, 3, 4}; /* by class + 1 */
  double k = m->resolution / t->cs;
  for (uint32_t y = 0; y < m->height; y++) {
    uint32_t oy = (uint32_t)((y + 0.5) * k);
    for (uint32_t xx = 0; xx < m->width; xx++) {
      uint32_t ox = (uint32_t)((xx + 0.5) * k);
      if (ox >= t->ow || oy >= t->oh)
        continue;
      size_t i = (size_t)y * m->width + xx, o = (size_t)oy * t->ow + ox;
      int8_t c = cls[i];
      if (rank[c + 1] > rank[ocl[o] + 1])
        ocl[o] = c;
      if (c > C_FREE || (c == C_UNKNOWN && t->unknown_blocks) ||
          (t->infl > 0 && dist->d[i] <= t->infl))
        blk[o] = 1;
    }
  }
}

json_t *pa_json_terrain_oceansim(jctx *x) {
  const pa_map_block *m;
  const int8_t *cells;
  if (pa_gw_map(x->c->g, &m, &cells) != 0)
    return pa_json_fail(x, PA_ERR_BUSY,
                        "the simulator has not published a map yet");
  tgrid t;
  if (read_req(x, m, &t) != 0)
    return NULL;
  int8_t *cls = classes(x, m, cells, &t);
  if (!cls)
    return NULL;
  /* inflation: free cells within the radius of anything blocking */
  pa_dist dist;
  memset(&dist, 0, sizeof dist);
  if (t.infl > 0 && inflate(x, m, cls, &t, &dist) != 0) {
    free(cls);
    return NULL;
  }
  /* coarse cells: blocked if any cell under it is; the class of highest
   * rank (agent > static > terrain > unknown > free) */
  size_t on = (size_t)t.ow * t.oh;
  uint8_t *blk = calloc(on ? on : 1, 1);
  int8_t *ocl = malloc(on ? on : 1);
  if (!blk || !ocl) {
    free(blk), free(ocl), free(cls);
    pa_dist_free(&dist);
    return pa_json_fail(x, PA_ERR_BUSY, "out of memory");
  }
  memset(ocl, C_FREE, on);
  coarsen(m, cls, &t, &dist, blk, ocl);
  free(cls);
  pa_dist_free(&dist);
  uint64_t blocked_n = 0;
  for (size_t i = 0; i < on; i++)
    blocked_n += blk[i];
  json_t *d = json_object();
  json_object_set_new(d, "width", json_integer(t.ow));
  json_object_set_new(d, "height", json_integer(t.oh));
  json_object_set_new(d, "cell_size", json_real(t.cs));
  json_object_set_new(d, "origin",
                      pa_json_vec3(m->origin_x, m->origin_y, m->origin_yaw));
  json_object_set_new(d, "inflation_radius", json_real(t.infl));
  json_object_set_new(d, "auv_y", json_real(t.auv_y));
  json_object_set_new(d, "include_static_obstacles", json_boolean(t.statics));
  json_object_set_new(d, "include_dynamic_agents", json_boolean(t.agents));
  json_object_set_new(d, "gen", json_integer(m->gen));
  json_object_set_new(d, "blocked_cells", json_integer((json_int_t)blocked_n));
  json_t *cl = json_object();
  json_object_set_new(cl, "-1", json_string("unknown"));
  json_object_set_new(cl, "0", json_string("free"));
  json_object_set_new(cl, "1", json_string("terrain"));
  json_object_set_new(cl, "2", json_string("static_obstacle"));
  json_object_set_new(cl, "3", json_string("dynamic_agent"));
  json_object_set_new(d, "classes", cl);
  if (t.format) {
    /* "PAG1", u32 width, u32 height, then the grid (u8 0/1) and the classes
     * (i8), row 0 = south, little-endian */
    size_t len = 12 + 2 * on;
    char *b = malloc(len);
    if (!b) {
      free(blk), free(ocl);
      json_decref(d);
      return pa_json_fail(x, PA_ERR_BUSY, "out of memory");
    }
    memcpy(b, "PAG1", 4);
    memcpy(b + 4, &t.ow, 4);
    memcpy(b + 8, &t.oh, 4);
    memcpy(b + 12, blk, on);
    memcpy(b + 12 + on, ocl, on);
    json_t *bi = json_object();
    json_object_set_new(bi, "bytes", json_integer((json_int_t)len));
    json_object_set_new(bi, "layout",
                        json_string("PAG1, u32 width, u32 height, u8 "
                                    "grid[height][width], i8 "
                                    "class_grid[height][width]; row 0 = "
                                    "south"));
    json_object_set_new(d, "binary", bi);
    free(x->c->bin);
    x->c->bin = b;
    x->c->bin_n = len;
  } else {
    json_t *grid = json_array(), *cg = json_array();
    for (uint32_t y = 0; y < t.oh; y++) {
      json_t *r1 = json_array(), *r2 = json_array();
      for (uint32_t xx = 0; xx < t.ow; xx++) {
        json_array_append_new(r1, json_integer(blk[(size_t)y * t.ow + xx]));
        json_array_append_new(r2, json_integer(ocl[(size_t)y * t.ow + xx]));
      }
      json_array_append_new(grid, r1);
      json_array_append_new(cg, r2);
    }
    json_object_set_new(d, "grid", grid);
    json_object_set_new(d, "class_grid", cg);
  }
  free(blk);
  free(ocl);
  return d;
}
