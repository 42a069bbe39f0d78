/* json_visual.c - RaisimServer's side of a connection: hibernate / wakeup
 * (the connection stays, its streams stop, commands are still answered), the
 * connection's status word, and the visual objects with their point pool in
 * the visual block (the spectator camera is json_spectator.c). */
#define _GNU_SOURCE
#include "json_int.h"

#include "pa_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *pa_json_conn_status(const pa_client *c) {
  if (c->closing || c->eof)
    return "terminating";
  return c->hibernating ? "hibernating" : "rendering";
}

static json_t *status_reply(pa_client *c) {
  json_t *d = json_object();
  json_object_set_new(d, "status", json_string(pa_json_conn_status(c)));
  return d;
}

json_t *pa_json_act_hibernate(jctx *x) {
  pa_gw_hibernate(x->c, true);
  return status_reply(x->c);
}

json_t *pa_json_act_wakeup(jctx *x) {
  pa_gw_hibernate(x->c, false);
  return status_reply(x->c);
}

/* ---- visual objects (shm/pa_visual.h) -------------------------------------
 * add_visual / update_visual / remove_visual / clear_visuals / list_visuals:
 * viewer-only annotations, as RaisimServer's addVisual*. pa-netgw is the
 * block's only writer; every check runs before the block is touched, so a
 * bad request changes nothing. */

/* The visual named so, or -1. */
static int vis_find(const pa_visual_block *b, const char *name) {
  for (uint32_t i = 0; i < b->count && i < PA_VIS_MAX; i++)
    if (!strncmp(b->v[i].name, name, PA_VIS_NAME_MAX))
      return (int)i;
  return -1;
}

static int vis_need(jctx *x, const char **name, int *idx) {
  if (pa_json_need_str(x, "name", PA_VIS_NAME_MAX, name) < 0)
    return -1;
  *idx = vis_find(x->c->g->st->vis, *name);
  if (*idx < 0) {
    pa_json_fail(x, PA_ERR_UNKNOWN_OBJECT, "no visual named '%s'", *name);
    return -1;
  }
  return 0;
}

static uint32_t pack_rgba(const double *c, size_t n) {
  uint32_t v = 0;
  for (size_t i = 0; i < 4; i++) {
    double f = i < n ? c[i] : 1.0;
    v = v << 8 | (uint32_t)lround(f * 255.0);
  }
  return v ? v : 1; /* 0 means "the visual's colour" */
}

/* A colour [r, g, b] or [r, g, b, a] in [0, 1]: 1 with out set, 0, -1. */
static int get_color(jctx *x, const char *key, float out[4]) {
  double c[4] = {1, 1, 1, 1};
  size_t n = 0;
  int r = pa_json_vec(x, key, 3, 4, c, &n);
  if (r <= 0)
    return r;
  for (size_t i = 0; i < n; i++)
    if (c[i] < 0 || c[i] > 1) {
      pa_json_fail(x, PA_ERR_INVALID_MESSAGE,
                   "data.%s[%zu] = %g: colours are in [0, 1]", key, i, c[i]);
      return -1;
    }
  for (size_t i = 0; i < 4; i++)
    out[i] = (float)c[i];
  return 1;
}

static int b64_val(unsigned char c) {
  if (c >= 'A' && c <= 'Z')
    return c - 'A';
  if (c >= 'a' && c <= 'z')
    return c - 'a' + 26;
  if (c >= '0' && c <= '9')
    return c - '0' + 52;
  return c == '+' ? 62 : c == '/' ? 63 : -1;
}

/* Standard base64 (padding optional) into out (cap bytes): the length, or
 * -1 when s is not base64 or decodes to more than cap. */
static long b64_decode(const char *s, size_t len, uint8_t *out, size_t cap) {
  while (len && s[len - 1] == '=')
    len--;
  if (len % 4 == 1)
    return -1;
  size_t o = 0;
  uint32_t acc = 0;
  int bits = 0;
  for (size_t i = 0; i < len; i++) {
    int v = b64_val((unsigned char)s[i]);
    if (v < 0)
      return -1;
    acc = acc << 6 | (uint32_t)v;
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      if (o == cap)
        return -1;
      out[o++] = (uint8_t)(acc >> bits);
    }
  }
  return (long)o;
}

/* data.points_b64: little-endian float32 x, y, z per point, or with
 * data.point_format "xyzrgba" also 4 colour bytes (16 bytes a point): the
 * compact form, ~10x cheaper to parse than JSON arrays. */
static int get_points_b64(jctx *x, json_t *a, uint32_t max, pa_vis_point **pts,
                          uint32_t *n) {
  const char *fmt = "xyz";
  if (pa_json_str(x, "point_format", 16, &fmt) < 0)
    return -1;
  size_t stride = !strcmp(fmt, "xyz") ? 12 : !strcmp(fmt, "xyzrgba") ? 16 : 0;
  if (!stride) {
    pa_json_fail(x, PA_ERR_INVALID_MESSAGE,
                 "data.point_format '%s': xyz or xyzrgba", fmt);
    return -1;
  }
  if (!json_is_string(a)) {
    pa_json_fail(x, PA_ERR_INVALID_ACTION_SHAPE,
                 "data.points_b64 must be a base64 string");
    return -1;
  }
  size_t len = json_string_length(a), cap = len / 4 * 3 + 3;
  uint8_t *raw = malloc(cap ? cap : 1);
  pa_vis_point *p = NULL;
  long got = raw ? b64_decode(json_string_value(a), len, raw, cap) : -1;
  if (got < 0 || (size_t)got % stride) {
    free(raw);
    pa_json_fail(x, PA_ERR_INVALID_ACTION_SHAPE,
                 "data.points_b64: not base64 of %zu-byte points (%s)", stride,
                 fmt);
    return -1;
  }
  size_t cnt = (size_t)got / stride;
  if (cnt > max) {
    free(raw);
    pa_json_fail(x, PA_ERR_INVALID_MESSAGE,
                 "data.points_b64: %zu points, at most %u here", cnt, max);
    return -1;
  }
  p = malloc((cnt ? cnt : 1) * sizeof *p);
  if (!p) {
    free(raw);
    pa_json_fail(x, PA_ERR_BUSY, "out of memory");
    return -1;
  }
  for (size_t i = 0; i < cnt; i++) {
    const uint8_t *r = raw + i * stride;
    memcpy(p[i].p, r, 12); /* little-endian hosts only (x86-64, arm64) */
    for (int k = 0; k < 3; k++)
      if (!isfinite(p[i].p[k]) || fabsf(p[i].p[k]) > VIS_COORD_MAX) {
        free(raw);
        free(p);
        pa_json_fail(x, PA_ERR_INVALID_MESSAGE,
                     "data.points_b64: point %zu is not finite or beyond "
                     "1e6 m",
                     i);
        return -1;
      }
    p[i].rgba = stride == 16 ? ((uint32_t)r[12] << 24 | (uint32_t)r[13] << 16 |
                                (uint32_t)r[14] << 8 | r[15])
                             : 0;
    if (stride == 16 && !p[i].rgba)
      p[i].rgba = 1; /* black, transparent: not "the visual's colour" */
  }
  free(raw);
  *pts = p;
  *n = (uint32_t)cnt;
  return 1;
}

/* data.points: [[x, y, z] or [x, y, z, r, g, b(, a)], ...] (or
 * data.points_b64) into a new array (*pts, freed by the caller): 1, 0
 * (absent) or -1. */
static int get_points(jctx *x, uint32_t max, pa_vis_point **pts, uint32_t *n) {
  json_t *a = json_object_get(x->data, "points");
  json_t *b = json_object_get(x->data, "points_b64");
  *pts = NULL;
  *n = 0;
  if (a && b) {
    pa_json_fail(x, PA_ERR_INVALID_MESSAGE,
                 "data.points or data.points_b64, not both");
    return -1;
  }
  if (b)
    return get_points_b64(x, b, max, pts, n);
  if (!a || json_is_null(a))
    return 0;
  if (!json_is_array(a)) {
    pa_json_fail(x, PA_ERR_INVALID_ACTION_SHAPE,
                 "data.points must be an array of [x, y, z] points");
    return -1;
  }
  size_t len = json_array_size(a);
  if (len > max) {
    pa_json_fail(x, PA_ERR_INVALID_MESSAGE,
                 "data.points: %zu points, at most %u here", len, max);
    return -1;
  }
  pa_vis_point *p = malloc((len ? len : 1) * sizeof *p);
  if (!p) {
    pa_json_fail(x, PA_ERR_BUSY, "out of memory");
    return -1;
  }
  for (size_t i = 0; i < len; i++) {
    json_t *e = json_array_get(a, i);
    size_t k = json_is_array(e) ? json_array_size(e) : 0;
    double v[7] = {0, 0, 0, 1, 1, 1, 1};
    bool ok = k == 2 || k == 3 || k == 6 || k == 7;
    for (size_t j = 0; ok && j < k; j++) {
      json_t *q = json_array_get(e, j);
      ok = json_is_number(q) && isfinite(json_number_value(q));
      v[j] = ok ? json_number_value(q) : 0;
      ok = ok && (j < 3 ? fabs(v[j]) <= VIS_COORD_MAX : v[j] >= 0 && v[j] <= 1);
    }
    if (!ok) {
      free(p);
      pa_json_fail(x, PA_ERR_INVALID_ACTION_SHAPE,
                   "data.points[%zu] must be [x, y], [x, y, z] or [x, y, z, "
                   "r, g, b(, a)] with |coordinates| <= 1e6 and colours in "
                   "[0, 1]",
                   i);
      return -1;
    }
    p[i].p[0] = (float)v[0];
    p[i].p[1] = (float)v[1];
    p[i].p[2] = (float)(k == 2 ? 0 : v[2]);
    p[i].rgba = k >= 6 ? pack_rgba(v + 3, k - 3) : 0;
  }
  *pts = p;
  *n = (uint32_t)len;
  return 1;
}

void pa_json_vis_default_size(uint32_t t, float s[3]) {
  static const float d[PA_VIS_TYPE_COUNT][3] = {
      [PA_VIS_SPHERE] = {0.1f, 0, 0},
      [PA_VIS_BOX] = {0.1f, 0.1f, 0.1f},
      [PA_VIS_CYLINDER] = {0.05f, 0.2f, 0},
      [PA_VIS_CAPSULE] = {0.05f, 0.2f, 0},
      [PA_VIS_ARROW] = {0.5f, 0.1f, 0},
      [PA_VIS_POLYLINE] = {2, 0, 0},
      [PA_VIS_POINT_CLOUD] = {3, 0, 0},
      [PA_VIS_TEXT] = {0.2f, 0, 0},
      [PA_VIS_MESH] = {1, 1, 1},
      [PA_VIS_HEIGHTMAP] = {1, 1, 0},
      [PA_VIS_INSTANCED] = {0.1f, 0.1f, 0.1f}};
  memcpy(s, d[t < PA_VIS_TYPE_COUNT ? t : 0], sizeof d[0]);
}

/* Reads the optional fields of add/update into v (a copy): 0 or -1. */
static int get_fields(jctx *x, pa_visual *v) {
  double p[3] = {0, 0, 0}, q[4], s[3], yaw = 0;
  size_t n = 0;
  int r = pa_json_vec(x, "position", 3, 2, p, &n);
  if (r < 0)
    return -1;
  if (r > 0) {
    for (size_t i = 0; i < n; i++)
      if (fabs(p[i]) > VIS_COORD_MAX)
        return pa_json_fail(x, PA_ERR_INVALID_MESSAGE,
                            "data.position[%zu] is beyond 1e6 m", i),
               -1;
    v->pos[0] = (float)p[0];
    v->pos[1] = (float)p[1];
    v->pos[2] = n == 3 ? (float)p[2] : 0;
  }
  if ((r = pa_json_vec(x, "orientation", 4, 0, q, &n)) < 0)
    return -1;
  if (r > 0) {
    double norm = sqrt(q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3]);
    if (!(norm > 1e-9))
      return pa_json_fail(x, PA_ERR_INVALID_MESSAGE,
                          "data.orientation [w, x, y, z] must not be zero"),
             -1;
    for (int i = 0; i < 4; i++)
      v->quat[i] = (float)(q[i] / norm);
  }
  if ((r = pa_json_num(x, "yaw", &yaw)) < 0)
    return -1;
  if (r > 0) {
    v->quat[0] = (float)cos(yaw / 2);
    v->quat[1] = v->quat[2] = 0;
    v->quat[3] = (float)sin(yaw / 2);
  }
  json_t *sz = json_object_get(x->data, "size");
  if (json_is_number(sz)) {
    s[0] = s[1] = s[2] = json_number_value(sz);
    n = v->type == PA_VIS_MESH ? 3 : 1; /* a mesh's scale: all three axes */
    r = 1;
  } else if ((r = pa_json_vec(x, "size", 3, 2, s, &n)) < 0) {
    return -1;
  }
  if (r > 0) {
    for (size_t i = 0; i < n; i++) {
      if (!(s[i] > 0) || s[i] > 1e4)
        return pa_json_fail(x, PA_ERR_INVALID_MESSAGE,
                            "data.size[%zu] = %g: sizes are in (0, 1e4]", i,
                            s[i]),
               -1;
      v->size[i] = (float)s[i];
    }
  }
  if (get_color(x, "color", v->rgba) < 0)
    return -1;
  json_t *vis = json_object_get(x->data, "visible");
  if (vis && !json_is_boolean(vis))
    return pa_json_fail(x, PA_ERR_INVALID_MESSAGE,
                        "data.visible must be true or false"),
           -1;
  if (vis)
    v->visible = json_is_true(vis);
  json_t *cam = json_object_get(x->data, "camera_visible");
  if (cam && !json_is_boolean(cam))
    return pa_json_fail(x, PA_ERR_INVALID_MESSAGE,
                        "data.camera_visible must be true or false"),
           -1;
  if (cam)
    v->camera_visible = json_is_true(cam);
  const char *text = NULL;
  if ((r = pa_json_str(x, "text", PA_VIS_TEXT_MAX, &text)) < 0)
    return -1;
  if (r > 0) {
    if (v->type != PA_VIS_TEXT)
      return pa_json_fail(x, PA_ERR_INVALID_MESSAGE,
                          "data.text is for type text only"),
             -1;
    snprintf(v->text, sizeof v->text, "%s", text);
  }
  return 0;
}

/* Removes visual i's points from the pack (under the seqlock). A visual
 * with no points has pt_off 0, whatever its type, so that no later cut can
 * leave its offset past pt_used (the viewers skip a visual whose points lie
 * outside the pack: shapes added after a shrinking cloud vanished so). */
static void pool_cut(pa_visual_block *b, uint32_t i) {
  uint32_t off = b->v[i].pt_off, n = b->v[i].pt_n;
  if (!n) {
    b->v[i].pt_off = 0;
    return;
  }
  memmove(b->pt + off, b->pt + off + n,
          (size_t)(b->pt_used - off - n) * sizeof b->pt[0]);
  for (uint32_t j = 0; j < b->count; j++)
    if (b->v[j].pt_n && b->v[j].pt_off > off)
      b->v[j].pt_off -= n;
  b->pt_used -= n;
  b->v[i].pt_off = 0;
  b->v[i].pt_n = 0;
}

/* Gives visual i the points old (its own, kept) + add, at the pack's end. */
static void pool_put(pa_visual_block *b, uint32_t i, const pa_vis_point *keep,
                     uint32_t n_keep, const pa_vis_point *add, uint32_t n_add) {
  pool_cut(b, i);
  if (n_keep)
    memcpy(b->pt + b->pt_used, keep, (size_t)n_keep * sizeof *keep);
  if (n_add)
    memcpy(b->pt + b->pt_used + n_keep, add, (size_t)n_add * sizeof *add);
  b->v[i].pt_n = n_keep + n_add;
  b->v[i].pt_off = b->v[i].pt_n ? b->pt_used : 0;
  b->pt_used += n_keep + n_add;
}

static bool has_points(uint32_t t) {
  return t == PA_VIS_POLYLINE || t == PA_VIS_POINT_CLOUD;
}

static json_t *vis_json(const pa_visual_block *b, const pa_visual *v) {
  (void)b;
  json_t *o = json_object();
  json_object_set_new(o, "name", json_string(v->name));
  json_object_set_new(o, "type", json_string(pa_vis_type_name(v->type)));
  json_object_set_new(o, "position",
                      pa_json_vec3(v->pos[0], v->pos[1], v->pos[2]));
  json_t *q = json_array();
  for (int i = 0; i < 4; i++)
    json_array_append_new(q, json_real(v->quat[i]));
  json_object_set_new(o, "orientation", q);
  json_object_set_new(o, "size",
                      pa_json_vec3(v->size[0], v->size[1], v->size[2]));
  json_t *c = json_array();
  for (int i = 0; i < 4; i++)
    json_array_append_new(c, json_real(v->rgba[i]));
  json_object_set_new(o, "color", c);
  json_object_set_new(o, "visible", json_boolean(v->visible));
  json_object_set_new(o, "camera_visible", json_boolean(v->camera_visible));
  if (has_points(v->type))
    json_object_set_new(o, "points", json_integer(v->pt_n));
  if (v->type == PA_VIS_MESH)
    json_object_set_new(o, "triangles", json_integer(v->pt_n / 3));
  if (v->type == PA_VIS_HEIGHTMAP) {
    json_object_set_new(
        o, "samples",
        json_pack("[ii]", (json_int_t)v->grid_nx, (json_int_t)v->grid_ny));
    json_object_set_new(o, "colormap",
                        json_string(pa_json_vis_colormap_name(v->colormap)));
  }
  if (v->type == PA_VIS_INSTANCED) {
    json_object_set_new(o, "shape",
                        json_string(pa_vis_type_name(v->inst_shape)));
    json_object_set_new(
        o, "instances",
        json_integer(v->inst_stride ? v->pt_n / v->inst_stride : 0));
  }
  if (v->type == PA_VIS_TEXT)
    json_object_set_new(o, "text", json_string(v->text));
  return o;
}

/* add_visual (new) and update_visual (existing): parse everything into a
 * copy, check the point budget, then write under the seqlock. */
static json_t *vis_set(jctx *x, bool add) {
  pa_netgw *g = x->c->g;
  pa_visual_block *b = g->st->vis;
  const char *name = NULL;
  int idx = -1;
  pa_visual v;
  if (add) {
    const char *type = NULL;
    if (pa_json_need_str(x, "name", PA_VIS_NAME_MAX, &name) < 0 ||
        pa_json_need_str(x, "type", 32, &type) < 0)
      return NULL;
    if (vis_find(b, name) >= 0)
      return pa_json_fail(x, PA_ERR_INVALID_MESSAGE,
                          "a visual named '%s' exists: update_visual or "
                          "remove_visual it",
                          name);
    uint32_t t = pa_vis_type_from_name(type);
    if (t == PA_VIS_NONE)
      return pa_json_fail(x, PA_ERR_INVALID_MESSAGE,
                          "data.type '%s': one of sphere, box, cylinder, "
                          "capsule, arrow, polyline, point_cloud, text, mesh, "
                          "heightmap, instanced",
                          type);
    if (b->count >= PA_VIS_MAX)
      return pa_json_fail(x, PA_ERR_BUSY,
                          "%d visuals exist already: remove_visual some",
                          PA_VIS_MAX);
    memset(&v, 0, sizeof v);
    snprintf(v.name, sizeof v.name, "%s", name);
    v.type = t;
    v.visible = 1;
    v.quat[0] = 1;
    v.rgba[0] = v.rgba[1] = v.rgba[2] = v.rgba[3] = 1;
    pa_json_vis_default_size(t, v.size);
  } else {
    if (vis_need(x, &name, &idx) < 0)
      return NULL;
    v = b->v[idx];
  }
  if (get_fields(x, &v) < 0)
    return NULL;
  json_t *app = json_object_get(x->data, "append");
  if (app && !json_is_boolean(app))
    return pa_json_fail(x, PA_ERR_INVALID_MESSAGE,
                        "data.append must be true or false");
  bool append = json_is_true(app);
  pa_vis_point *pts = NULL;
  uint32_t n = 0;
  if ((json_object_get(x->data, "points") ||
       json_object_get(x->data, "points_b64")) &&
      !has_points(v.type))
    return pa_json_fail(x, PA_ERR_INVALID_MESSAGE,
                        "data.points is for polyline and point_cloud only");
  int r = get_points(x, PA_VIS_CLOUD_MAX, &pts, &n);
  if (r == 0)
    r = pa_json_vis_geom(x, b, idx, &v, &pts, &n);
  if (r == 2)
    return JPENDING; /* a mesh file's decoder: run again when it is done */
  if (r < 0)
    return NULL;
  uint32_t keep = append && idx >= 0 && has_points(v.type) ? b->v[idx].pt_n : 0;
  uint32_t old = idx >= 0 ? b->v[idx].pt_n : 0;
  if (r > 0 && has_points(v.type) && keep + n > PA_VIS_CLOUD_MAX) {
    free(pts);
    return pa_json_fail(x, PA_ERR_INVALID_MESSAGE,
                        "'%s' would have %u points, at most %d", name, keep + n,
                        PA_VIS_CLOUD_MAX);
  }
  if (r > 0 && b->pt_used - old + keep + n > PA_VIS_POINTS_MAX) {
    free(pts);
    return pa_json_fail(x, PA_ERR_BUSY,
                        "all visuals together hold at most %d points (%u in "
                        "use)",
                        PA_VIS_POINTS_MAX, b->pt_used);
  }
  pa_vis_point *kept = NULL;
  if (r > 0 && keep) {
    kept = malloc((size_t)keep * sizeof *kept);
    if (!kept) {
      free(pts);
      return pa_json_fail(x, PA_ERR_BUSY, "out of memory");
    }
    memcpy(kept, b->pt + b->v[idx].pt_off, (size_t)keep * sizeof *kept);
  }
  pa_stack_visual_begin(g->st);
  if (add) {
    idx = (int)b->count;
    v.pt_off = 0;
    v.pt_n = 0;
    b->v[idx] = v;
    b->count++;
  } else {
    v.pt_off = b->v[idx].pt_off; /* the pack's own */
    v.pt_n = b->v[idx].pt_n;
    b->v[idx] = v;
  }
  if (r > 0)
    pool_put(b, (uint32_t)idx, kept, keep, pts, n);
  pa_stack_visual_end(g->st);
  free(kept);
  free(pts);
  return vis_json(b, &b->v[idx]);
}

json_t *pa_json_act_add_visual(jctx *x) { return vis_set(x, true); }

/* A mesh file decoded off the loop: the request runs again, every check
 * again (a visual of its name may exist by now), with the points there. */
json_t *pa_json_done_add_visual(jctx *x, const pa_reply *r) {
  (void)r;
  return vis_set(x, true);
}
json_t *pa_json_done_update_visual(jctx *x, const pa_reply *r) {
  (void)r;
  return vis_set(x, false);
}

/* RaisimServer's names (addVisualSphere, ..., addPointCloud): add_visual
 * with the type implied (a "type" in the data is refused by the table). */
static json_t *add_typed(jctx *x, const char *type) {
  json_object_set_new(x->data, "type", json_string(type));
  return vis_set(x, true);
}
json_t *pa_json_act_add_visual_sphere(jctx *x) {
  return add_typed(x, "sphere");
}
json_t *pa_json_act_add_visual_box(jctx *x) { return add_typed(x, "box"); }
json_t *pa_json_act_add_visual_cylinder(jctx *x) {
  return add_typed(x, "cylinder");
}
json_t *pa_json_act_add_visual_capsule(jctx *x) {
  return add_typed(x, "capsule");
}
json_t *pa_json_act_add_visual_arrow(jctx *x) { return add_typed(x, "arrow"); }
json_t *pa_json_act_add_visual_polyline(jctx *x) {
  return add_typed(x, "polyline");
}
json_t *pa_json_act_add_point_cloud(jctx *x) {
  return add_typed(x, "point_cloud");
}
json_t *pa_json_act_add_visual_mesh(jctx *x) { return add_typed(x, "mesh"); }
json_t *pa_json_done_add_visual_mesh(jctx *x, const pa_reply *r) {
  (void)r;
  return add_typed(x, "mesh");
}
json_t *pa_json_act_add_visual_heightmap(jctx *x) {
  return add_typed(x, "heightmap");
}
json_t *pa_json_act_add_instanced_visuals(jctx *x) {
  return add_typed(x, "instanced");
}
json_t *pa_json_act_update_visual(jctx *x) { return vis_set(x, false); }

json_t *pa_json_act_remove_visual(jctx *x) {
  pa_netgw *g = x->c->g;
  pa_visual_block *b = g->st->vis;
  const char *name;
  int idx;
  if (vis_need(x, &name, &idx) < 0)
    return NULL;
  pa_stack_visual_begin(g->st);
  pool_cut(b, (uint32_t)idx);
  /* Keep insertion order: the list and the drawing order stay stable. */
  memmove(b->v + idx, b->v + idx + 1,
          (size_t)(b->count - (uint32_t)idx - 1) * sizeof b->v[0]);
  b->count--;
  memset(&b->v[b->count], 0, sizeof b->v[0]);
  pa_stack_visual_end(g->st);
  json_t *d = json_object();
  json_object_set_new(d, "name", json_string(name));
  return d;
}

json_t *pa_json_act_clear_visuals(jctx *x) {
  pa_netgw *g = x->c->g;
  pa_visual_block *b = g->st->vis;
  uint32_t n = b->count;
  pa_stack_visual_begin(g->st);
  b->count = 0;
  b->pt_used = 0;
  pa_stack_visual_end(g->st);
  json_t *d = json_object();
  json_object_set_new(d, "removed", json_integer(n));
  return d;
}

json_t *pa_json_act_list_visuals(jctx *x) {
  const pa_visual_block *b = x->c->g->st->vis;
  json_t *l = json_array();
  for (uint32_t i = 0; i < b->count && i < PA_VIS_MAX; i++)
    json_array_append_new(l, vis_json(b, &b->v[i]));
  json_t *d = pa_json_counted("visuals", l);
  json_object_set_new(d, "points_used", json_integer(b->pt_used));
  return d;
}

size_t pa_json_cost_list_visuals(jctx *x) {
  (void)x;
  return 512u * PA_VIS_MAX;
}

void pa_json_visual_recover(pa_netgw *g) {
  pa_visual_block *b = g->st->vis;
  uint64_t q = __atomic_load_n(&b->seq, __ATOMIC_ACQUIRE);
  if (!(q & 1u))
    return;
  /* A pa-netgw died mid-update: keep what is consistent, else start over. */
  bool ok = b->count <= PA_VIS_MAX && b->pt_used <= PA_VIS_POINTS_MAX;
  for (uint32_t i = 0; ok && i < b->count; i++)
    ok = b->v[i].type > PA_VIS_NONE && b->v[i].type < PA_VIS_TYPE_COUNT &&
         (!b->v[i].pt_n ||
          (uint64_t)b->v[i].pt_off + b->v[i].pt_n <= b->pt_used);
  pa_stack_visual_begin(g->st);
  if (!ok) {
    pa_warn("visuals were left mid-update by a dead pa-netgw and are "
            "inconsistent: cleared");
    b->count = b->pt_used = 0;
  }
  pa_stack_visual_end(g->st);
}
