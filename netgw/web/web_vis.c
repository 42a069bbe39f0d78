/* web_vis.c - the visual objects (shm/pa_visual.h) for the browser's /ws,
 * sent as deltas (issue 32): one moved sphere must not re-send a 100k-point
 * cloud to every viewer. Each copy of the block gets a table of (name, hash
 * of all the visual shows); a viewer gets every visual once ("full": true),
 * then only the visuals whose hash changed and the names of those removed
 * ("full": false). The viewer (web/common.js) merges them by name. The
 * block keeps visuals in insertion order and closes gaps on removal, so a
 * visual's index is where it is now, not a part of what it shows. */
#define _GNU_SOURCE
#include "web_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A word at a time: a 100k-point cloud hashes in a fraction of a ms. */
static uint64_t mix(uint64_t h, const void *p, size_t n) {
  const unsigned char *c = p;
  for (; n >= 8; n -= 8, c += 8) {
    uint64_t k;
    memcpy(&k, c, 8);
    h = (h ^ k) * 0x9e3779b97f4a7c15ull;
    h ^= h >> 29;
  }
  for (; n; n--, c++)
    h = (h ^ *c) * 0x100000001b3ull;
  return h;
}

/* v's points, or 0 when they are out of the pack (another process's
 * memory, not trusted). */
static uint32_t points_of(const pa_visual_block *vb, const pa_visual *v) {
  uint32_t off = v->pt_off, n = v->pt_n;
  if (off > vb->pt_used || n > vb->pt_used - off ||
      vb->pt_used > PA_VIS_POINTS_MAX)
    return 0;
  return n;
}

static uint64_t vis_hash(const pa_visual_block *vb, const pa_visual *v) {
  pa_visual c = *v;
  c.pt_off = 0; /* moves when an earlier visual is removed */
  c.pt_n = points_of(vb, v);
  size_t l = strnlen(c.name, sizeof c.name);
  memset(c.name + l, 0, sizeof c.name - l);
  l = strnlen(c.text, sizeof c.text);
  memset(c.text + l, 0, sizeof c.text - l);
  uint64_t h = mix(0xcbf29ce484222325ull, &c, sizeof c);
  return mix(h, &vb->pt[c.pt_n ? v->pt_off : 0], c.pt_n * sizeof vb->pt[0]);
}

static uint32_t vis_count(const pa_visual_block *vb) {
  return vb->count < PA_VIS_MAX ? vb->count : PA_VIS_MAX;
}

static void table(const pa_visual_block *vb, pa_vis_table *t) {
  t->n = vis_count(vb);
  for (uint32_t i = 0; i < t->n; i++) {
    snprintf(t->v[i].name, sizeof t->v[i].name, "%s", vb->v[i].name);
    t->v[i].hash = vis_hash(vb, &vb->v[i]);
  }
}

/* s's name in t (and with s's hash when same): true when there. */
static bool in_table(const pa_vis_table *t, const pa_vis_sum *s, bool same) {
  for (uint32_t i = 0; i < t->n; i++)
    if (!strcmp(t->v[i].name, s->name))
      return !same || t->v[i].hash == s->hash;
  return false;
}

bool pa_webvis_refresh(pa_web *w, uint32_t *gen) {
  pa_netgw *g = w->g;
  uint32_t vis_gen = __atomic_load_n(&g->st->vis->gen, __ATOMIC_ACQUIRE);
  *gen = vis_gen;
  if (w->vis && w->vis_cur_ok && w->vis->gen == vis_gen &&
      w->vis_cur_gen == vis_gen)
    return true;
  if (!w->vis)
    w->vis = malloc(sizeof *w->vis);
  if (!w->vis_cur)
    w->vis_cur = malloc(sizeof *w->vis_cur);
  if (!w->vis_prev)
    w->vis_prev = malloc(sizeof *w->vis_prev);
  if (!w->vis || !w->vis_cur || !w->vis_prev)
    return false;
  if (!pa_stack_visual_read(g->st, w->vis)) {
    w->vis->gen = vis_gen - 1; /* mid-update: read again next frame */
    return false;
  }
  if (!w->vis_cur_ok || w->vis_cur_gen != w->vis->gen) {
    pa_vis_table *t = w->vis_prev;
    w->vis_prev = w->vis_cur;
    w->vis_prev_gen = w->vis_cur_gen;
    w->vis_prev_ok = w->vis_cur_ok;
    w->vis_cur = t;
    table(w->vis, t);
    w->vis_cur_gen = w->vis->gen;
    w->vis_cur_ok = true;
  }
  return w->vis->gen == vis_gen;
}

/* Visual i as one element of "visuals"; the points of a point cloud,
 * mesh, height map or instanced visual go into bin (u32 index, u32 n, n x (f32
 * x, y, z, u32 0xRRGGBBAA)). */
static void vis_one(const pa_visual_block *vb, uint32_t i, bool first,
                    pa_sbuf *b, pa_sbuf *bin, uint32_t *clouds) {
  const pa_visual *v = &vb->v[i];
  char name[PA_VIS_NAME_MAX], text[PA_VIS_TEXT_MAX];
  snprintf(name, sizeof name, "%s", v->name);
  snprintf(text, sizeof text, "%s", v->text);
  json_t *js = json_pack("{ssss}", "name", name, "text", text);
  char *jn = js ? json_dumps(js, JSON_COMPACT) : NULL;
  const char *tn = pa_vis_type_name(v->type);
  pa_sb_printf(b,
               "%s{\"index\":%u,\"type\":\"%s\",\"visible\":%s,"
               "\"pos\":[%.9g,%.9g,%.9g],\"quat\":[%.9g,%.9g,%.9g,%.9g],"
               "\"size\":[%.9g,%.9g,%.9g],\"rgba\":[%.4g,%.4g,%.4g,%.4g],"
               "\"label\":%s",
               first ? "" : ",", i, tn ? tn : "none",
               v->visible ? "true" : "false", v->pos[0], v->pos[1], v->pos[2],
               v->quat[0], v->quat[1], v->quat[2], v->quat[3], v->size[0],
               v->size[1], v->size[2], v->rgba[0], v->rgba[1], v->rgba[2],
               v->rgba[3], jn ? jn : "{}");
  free(jn);
  json_decref(js);
  uint32_t n = points_of(vb, v);
  const pa_vis_point *pt = &vb->pt[n ? v->pt_off : 0];
  if (v->type == PA_VIS_POLYLINE) {
    pa_sb_printf(b, ",\"points\":[");
    for (uint32_t k = 0; k < n; k++)
      pa_sb_printf(b, "%s[%.5g,%.5g,%.5g,%u]", k ? "," : "", pt[k].p[0],
                   pt[k].p[1], pt[k].p[2], pt[k].rgba);
    pa_sb_printf(b, "]");
  } else if (v->type == PA_VIS_POINT_CLOUD || v->type == PA_VIS_MESH ||
             v->type == PA_VIS_HEIGHTMAP || v->type == PA_VIS_INSTANCED) {
    /* their points binary, as a cloud's: a mesh's triangles, a height
     * map's grid, the instances' poses */
    if (v->type == PA_VIS_HEIGHTMAP)
      pa_sb_printf(b, ",\"grid\":[%u,%u]", v->grid_nx, v->grid_ny);
    if (v->type == PA_VIS_INSTANCED) {
      const char *sn = pa_vis_type_name(v->inst_shape);
      pa_sb_printf(b, ",\"shape\":\"%s\",\"stride\":%u", sn ? sn : "none",
                   v->inst_stride);
    }
    pa_sb_printf(b, ",\"cloud_points\":%u", n);
    pa_sb_u32(bin, i);
    pa_sb_u32(bin, n);
    pa_sb_bytes(bin, pt, (size_t)n * sizeof *pt);
    (*clouds)++;
  }
  pa_sb_printf(b, "}");
}

void pa_webvis_build(const pa_web *w, const pa_vis_table *old, pa_sbuf *b,
                     pa_sbuf *bin) {
  const pa_visual_block *vb = w->vis;
  const pa_vis_table *cur = w->vis_cur;
  pa_sb_printf(b, "{\"type\":\"visuals\",\"gen\":%u,\"full\":%s,\"visuals\":[",
               w->vis_cur_gen, old ? "false" : "true");
  pa_sb_bytes(bin, "VIS1", 4);
  size_t count_at = bin->n;
  pa_sb_u32(bin, 0);
  uint32_t clouds = 0;
  bool first = true;
  for (uint32_t i = 0; i < cur->n; i++) {
    if (old && in_table(old, &cur->v[i], true))
      continue; /* the viewer has it as it is */
    vis_one(vb, i, first, b, bin, &clouds);
    first = false;
  }
  pa_sb_printf(b, "]");
  if (old) {
    pa_sb_printf(b, ",\"removed\":[");
    first = true;
    for (uint32_t i = 0; i < old->n; i++) {
      if (in_table(cur, &old->v[i], false))
        continue;
      json_t *js = json_string(old->v[i].name);
      char *jn = js ? json_dumps(js, JSON_ENCODE_ANY) : NULL;
      if (jn)
        pa_sb_printf(b, "%s%s", first ? "" : ",", jn);
      first = first && !jn;
      free(jn);
      json_decref(js);
    }
    pa_sb_printf(b, "]");
  }
  pa_sb_printf(b, "}");
  if (!bin->oom)
    memcpy(bin->s + count_at, &clouds, 4);
}

bool pa_webvis_keep(const pa_web *w, pa_vis_table **dst) {
  if (!*dst)
    *dst = malloc(sizeof **dst);
  if (!*dst)
    return false;
  memcpy(*dst, w->vis_cur,
         offsetof(pa_vis_table, v) + w->vis_cur->n * sizeof w->vis_cur->v[0]);
  return true;
}

void pa_webvis_free(pa_web *w) {
  free(w->vis);
  free(w->vis_cur);
  free(w->vis_prev);
  w->vis = NULL;
  w->vis_cur = w->vis_prev = NULL;
  w->vis_cur_ok = w->vis_prev_ok = false;
}
