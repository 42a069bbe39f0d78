/* foxglove_scene_be.c - the two encodings of /scene: the scene builder
 * (foxglove_scene.c) describes each entity and primitive once, and a
 * back-end writes them as JSON or as protobuf (protoc-c, the foxglove
 * schemas of netgw/foxglove/proto). */
#define _GNU_SOURCE
#include "foxglove.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "foxglove/SceneUpdate.pb-c.h"

#define PUTS(b, lit) pa_fox_buf_put((b), (lit), sizeof(lit) - 1)

/* ---- JSON ---------------------------------------------------------- */

static const char *const pr_names[PA_FOX_PRIMS] = {
    "arrows", "cubes",     "spheres", "cylinders",
    "lines",  "triangles", "texts",   "models"};

static void j_color(pa_fox_buf *b, const float c[4]) {
  pa_fox_buf_printf(b, "{\"r\":%.4g,\"g\":%.4g,\"b\":%.4g,\"a\":%.4g}", c[0],
                    c[1], c[2], c[3]);
}

static void j_pose(pa_fox_buf *b, const pa_fox_prim *p) {
  PUTS(b, "{\"pose\":{\"position\":");
  pa_fox_vec3(b, p->pos[0], p->pos[1], p->pos[2]);
  PUTS(b, ",\"orientation\":{\"x\":");
  pa_fox_num(b, p->q[1]);
  PUTS(b, ",\"y\":");
  pa_fox_num(b, p->q[2]);
  PUTS(b, ",\"z\":");
  pa_fox_num(b, p->q[3]);
  PUTS(b, ",\"w\":");
  pa_fox_num(b, p->q[0]);
  PUTS(b, "}}");
}

/* "points", "color", "colors", "indices" of a line or a triangle list */
static void j_mesh(pa_fox_buf *b, const pa_fox_prim *p) {
  PUTS(b, ",\"points\":[");
  for (uint32_t i = 0; i < p->n_pts; i++) {
    if (i)
      PUTS(b, ",");
    pa_fox_vec3(b, p->pts[i][0], p->pts[i][1], p->pts[i][2]);
  }
  PUTS(b, "],\"color\":");
  j_color(b, p->color);
  PUTS(b, ",\"colors\":[");
  for (uint32_t i = 0; i < p->n_colors; i++) {
    if (i)
      PUTS(b, ",");
    j_color(b, p->colors[i]);
  }
  PUTS(b, "],\"indices\":[");
  for (uint32_t i = 0; i < p->n_idx; i++)
    pa_fox_buf_printf(b, i ? ",%u" : "%u", p->idx[i]);
  PUTS(b, "]");
}

static void j_head(pa_fox_buf *h, const char *frame, const char *id,
                   bool locked, const char *const *meta) {
  PUTS(h, ",\"frame_id\":");
  pa_fox_str(h, frame);
  PUTS(h, ",\"id\":");
  pa_fox_str(h, id);
  pa_fox_buf_printf(h,
                    ",\"lifetime\":{\"sec\":0,\"nsec\":0},"
                    "\"frame_locked\":%s,\"metadata\":[",
                    locked ? "true" : "false");
  for (size_t i = 0; meta && meta[i] && meta[i + 1]; i += 2) {
    if (i)
      PUTS(h, ",");
    PUTS(h, "{\"key\":");
    pa_fox_str(h, meta[i]);
    PUTS(h, ",\"value\":");
    pa_fox_str(h, meta[i + 1]);
    PUTS(h, "}");
  }
  PUTS(h, "]");
}

static void j_prim(pa_fox_buf *b, const pa_fox_prim *p) {
  if (b->n)
    PUTS(b, ",");
  j_pose(b, p);
  switch (p->kind) {
  case PA_FOX_PR_ARROW:
    PUTS(b, ",\"shaft_length\":");
    pa_fox_num(b, p->shaft_length);
    PUTS(b, ",\"shaft_diameter\":");
    pa_fox_num(b, p->shaft_diameter);
    PUTS(b, ",\"head_length\":");
    pa_fox_num(b, p->head_length);
    PUTS(b, ",\"head_diameter\":");
    pa_fox_num(b, p->head_diameter);
    break;
  case PA_FOX_PR_CUBE:
  case PA_FOX_PR_SPHERE:
  case PA_FOX_PR_CYLINDER:
    PUTS(b, ",\"size\":");
    pa_fox_vec3(b, p->size[0], p->size[1], p->size[2]);
    if (p->kind == PA_FOX_PR_CYLINDER) {
      PUTS(b, ",\"bottom_scale\":");
      pa_fox_num(b, p->bottom_scale);
      PUTS(b, ",\"top_scale\":");
      pa_fox_num(b, p->top_scale);
    }
    break;
  case PA_FOX_PR_LINE:
    pa_fox_buf_printf(b, ",\"type\":%d,\"thickness\":", p->line_type);
    pa_fox_num(b, p->thickness);
    pa_fox_buf_printf(b, ",\"scale_invariant\":%s",
                      p->scale_invariant ? "true" : "false");
    j_mesh(b, p);
    PUTS(b, "}");
    return;
  case PA_FOX_PR_TRIANGLES:
    j_mesh(b, p);
    PUTS(b, "}");
    return;
  case PA_FOX_PR_TEXT:
    pa_fox_buf_printf(
        b, ",\"billboard\":%s,\"font_size\":", p->billboard ? "true" : "false");
    pa_fox_num(b, p->font_size);
    pa_fox_buf_printf(b, ",\"scale_invariant\":%s,\"text\":",
                      p->scale_invariant ? "true" : "false");
    pa_fox_str(b, p->text ? p->text : "");
    break;
  case PA_FOX_PR_MODEL:
    PUTS(b, ",\"scale\":");
    pa_fox_vec3(b, p->size[0], p->size[1], p->size[2]);
    pa_fox_buf_printf(b, ",\"override_color\":%s,\"url\":",
                      p->override_color ? "true" : "false");
    pa_fox_str(b, p->url ? p->url : "");
    PUTS(b, ",\"media_type\":");
    pa_fox_str(b, p->media_type ? p->media_type : "");
    PUTS(b, ",\"data\":\"");
    pa_fox_base64(b, p->data, p->data_len);
    PUTS(b, "\"");
    break;
  default:
    break;
  }
  PUTS(b, ",\"color\":");
  j_color(b, p->color);
  PUTS(b, "}");
}

static void j_entity(pa_fox_buf *b, size_t n, uint64_t t_ns,
                     const pa_fox_buf *head, const pa_fox_buf *lists) {
  if (n)
    PUTS(b, ",");
  PUTS(b, "{\"timestamp\":");
  pa_fox_stamp(b, t_ns);
  pa_fox_buf_put(b, head->p, head->n);
  for (int k = 0; k < PA_FOX_PRIMS; k++) {
    pa_fox_buf_printf(b, ",\"%s\":[", pr_names[k]);
    pa_fox_buf_put(b, lists[k].p, lists[k].n);
    PUTS(b, "]");
  }
  PUTS(b, "}");
}

static void j_deletion(pa_fox_buf *b, size_t n, uint64_t t_ns, const char *id) {
  if (n)
    PUTS(b, ",");
  PUTS(b, "{\"timestamp\":");
  pa_fox_stamp(b, t_ns);
  pa_fox_buf_printf(b, ",\"type\":%d,\"id\":", id ? 0 : 1);
  pa_fox_str(b, id ? id : "");
  PUTS(b, "}");
}

static void j_part(pa_fox_buf *b, int part) {
  static const char *const parts[] = {"{\"entities\":[", "],\"deletions\":[",
                                      "]}"};
  pa_fox_buf_put(b, parts[part], strlen(parts[part]));
}

const pa_fox_scene_be pa_fox_scene_json = {j_head, j_prim, j_entity, j_deletion,
                                           j_part};

/* ---- protobuf ------------------------------------------------------- */

static void varint(pa_fox_buf *b, uint64_t v) {
  uint8_t o[10];
  size_t n = 0;
  do {
    o[n++] = (uint8_t)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
    v >>= 7;
  } while (v);
  pa_fox_buf_put(b, o, n);
}

/* m as field `field` (length-delimited) of the message being written */
static void put_msg(pa_fox_buf *b, uint32_t field, const void *m) {
  const ProtobufCMessage *pm = m;
  varint(b, (uint64_t)field << 3 | 2);
  varint(b, protobuf_c_message_get_packed_size(pm));
  pa_fox_pb_pack(b, pm);
}

static void p_head(pa_fox_buf *h, const char *frame, const char *id,
                   bool locked, const char *const *meta) {
  size_t nm = 0;
  while (meta && meta[2 * nm] && meta[2 * nm + 1])
    nm++;
  Foxglove__KeyValuePair kv[nm ? nm : 1], *kvp[nm ? nm : 1];
  for (size_t i = 0; i < nm; i++) {
    foxglove__key_value_pair__init(&kv[i]);
    kv[i].key = (char *)meta[2 * i];
    kv[i].value = (char *)meta[2 * i + 1];
    kvp[i] = &kv[i];
  }
  Google__Protobuf__Duration life = GOOGLE__PROTOBUF__DURATION__INIT;
  Foxglove__SceneEntity e = FOXGLOVE__SCENE_ENTITY__INIT;
  e.frame_id = (char *)frame;
  e.id = (char *)id;
  e.lifetime = &life;
  e.frame_locked = locked;
  e.n_metadata = nm;
  e.metadata = kvp;
  pa_fox_pb_pack(h, &e);
}

/* The parts every primitive has: pose, colour; and a mesh's arrays. */
typedef struct {
  Foxglove__Vector3 pos, size;
  Foxglove__Quaternion q;
  Foxglove__Pose pose;
  Foxglove__Color color;
  Foxglove__Point3 *pts, **ptp;
  Foxglove__Color *cols, **colp;
} p_parts;

static bool p_parts_fill(p_parts *s, const pa_fox_prim *p) {
  foxglove__vector3__init(&s->pos);
  foxglove__vector3__init(&s->size);
  foxglove__quaternion__init(&s->q);
  foxglove__pose__init(&s->pose);
  foxglove__color__init(&s->color);
  s->pos.x = p->pos[0], s->pos.y = p->pos[1], s->pos.z = p->pos[2];
  s->q.w = p->q[0], s->q.x = p->q[1], s->q.y = p->q[2], s->q.z = p->q[3];
  s->pose.position = &s->pos;
  s->pose.orientation = &s->q;
  s->size.x = p->size[0], s->size.y = p->size[1], s->size.z = p->size[2];
  s->color.r = p->color[0], s->color.g = p->color[1];
  s->color.b = p->color[2], s->color.a = p->color[3];
  size_t np = p->n_pts, nc = p->n_colors;
  s->pts = malloc((np ? np : 1) * sizeof *s->pts);
  s->ptp = malloc((np ? np : 1) * sizeof *s->ptp);
  s->cols = malloc((nc ? nc : 1) * sizeof *s->cols);
  s->colp = malloc((nc ? nc : 1) * sizeof *s->colp);
  if (!s->pts || !s->ptp || !s->cols || !s->colp)
    return false;
  for (size_t i = 0; i < np; i++) {
    foxglove__point3__init(&s->pts[i]);
    s->pts[i].x = p->pts[i][0];
    s->pts[i].y = p->pts[i][1];
    s->pts[i].z = p->pts[i][2];
    s->ptp[i] = &s->pts[i];
  }
  for (size_t i = 0; i < nc; i++) {
    foxglove__color__init(&s->cols[i]);
    s->cols[i].r = p->colors[i][0], s->cols[i].g = p->colors[i][1];
    s->cols[i].b = p->colors[i][2], s->cols[i].a = p->colors[i][3];
    s->colp[i] = &s->cols[i];
  }
  return true;
}

static void p_parts_free(p_parts *s) {
  free(s->pts);
  free(s->ptp);
  free(s->cols);
  free(s->colp);
}

/* SceneEntity's field of each primitive list: arrows 7 ... models 14 */
#define P_FIELD(kind) (7u + (uint32_t)(kind))

static void p_mesh(pa_fox_buf *b, const pa_fox_prim *p, p_parts *s) {
  if (p->kind == PA_FOX_PR_LINE) {
    Foxglove__LinePrimitive m = FOXGLOVE__LINE_PRIMITIVE__INIT;
    m.type = (Foxglove__LinePrimitive__Type)p->line_type;
    m.pose = &s->pose;
    m.thickness = p->thickness;
    m.scale_invariant = p->scale_invariant;
    m.n_points = p->n_pts, m.points = s->ptp;
    m.color = &s->color;
    m.n_colors = p->n_colors, m.colors = s->colp;
    m.n_indices = p->n_idx, m.indices = (uint32_t *)p->idx;
    put_msg(b, P_FIELD(p->kind), &m);
    return;
  }
  Foxglove__TriangleListPrimitive m = FOXGLOVE__TRIANGLE_LIST_PRIMITIVE__INIT;
  m.pose = &s->pose;
  m.n_points = p->n_pts, m.points = s->ptp;
  m.color = &s->color;
  m.n_colors = p->n_colors, m.colors = s->colp;
  m.n_indices = p->n_idx, m.indices = (uint32_t *)p->idx;
  put_msg(b, P_FIELD(p->kind), &m);
}

static void p_prim(pa_fox_buf *b, const pa_fox_prim *p) {
  p_parts s;
  if (!p_parts_fill(&s, p)) {
    b->oom = true;
    p_parts_free(&s);
    return;
  }
  uint32_t f = P_FIELD(p->kind);
  switch (p->kind) {
  case PA_FOX_PR_ARROW: {
    Foxglove__ArrowPrimitive m = FOXGLOVE__ARROW_PRIMITIVE__INIT;
    m.pose = &s.pose, m.color = &s.color;
    m.shaft_length = p->shaft_length, m.shaft_diameter = p->shaft_diameter;
    m.head_length = p->head_length, m.head_diameter = p->head_diameter;
    put_msg(b, f, &m);
    break;
  }
  case PA_FOX_PR_CUBE: {
    Foxglove__CubePrimitive m = FOXGLOVE__CUBE_PRIMITIVE__INIT;
    m.pose = &s.pose, m.size = &s.size, m.color = &s.color;
    put_msg(b, f, &m);
    break;
  }
  case PA_FOX_PR_SPHERE: {
    Foxglove__SpherePrimitive m = FOXGLOVE__SPHERE_PRIMITIVE__INIT;
    m.pose = &s.pose, m.size = &s.size, m.color = &s.color;
    put_msg(b, f, &m);
    break;
  }
  case PA_FOX_PR_CYLINDER: {
    Foxglove__CylinderPrimitive m = FOXGLOVE__CYLINDER_PRIMITIVE__INIT;
    m.pose = &s.pose, m.size = &s.size, m.color = &s.color;
    m.bottom_scale = p->bottom_scale, m.top_scale = p->top_scale;
    put_msg(b, f, &m);
    break;
  }
  case PA_FOX_PR_LINE:
  case PA_FOX_PR_TRIANGLES:
    p_mesh(b, p, &s);
    break;
  case PA_FOX_PR_TEXT: {
    Foxglove__TextPrimitive m = FOXGLOVE__TEXT_PRIMITIVE__INIT;
    m.pose = &s.pose, m.color = &s.color;
    m.billboard = p->billboard, m.font_size = p->font_size;
    m.scale_invariant = p->scale_invariant;
    m.text = (char *)(p->text ? p->text : "");
    put_msg(b, f, &m);
    break;
  }
  case PA_FOX_PR_MODEL: {
    Foxglove__ModelPrimitive m = FOXGLOVE__MODEL_PRIMITIVE__INIT;
    m.pose = &s.pose, m.scale = &s.size, m.color = &s.color;
    m.override_color = p->override_color;
    m.url = (char *)(p->url ? p->url : "");
    m.media_type = (char *)(p->media_type ? p->media_type : "");
    m.data.data = (uint8_t *)p->data, m.data.len = p->data_len;
    put_msg(b, f, &m);
    break;
  }
  default:
    break;
  }
  p_parts_free(&s);
}

static void p_entity(pa_fox_buf *b, size_t n, uint64_t t_ns,
                     const pa_fox_buf *head, const pa_fox_buf *lists) {
  (void)n;
  Google__Protobuf__Timestamp ts = GOOGLE__PROTOBUF__TIMESTAMP__INIT;
  pa_fox_pb_stamp(&ts, t_ns);
  pa_fox_buf tsb = {0};
  put_msg(&tsb, 1, &ts); /* SceneEntity.timestamp */
  size_t len = tsb.n + head->n;
  for (int k = 0; k < PA_FOX_PRIMS; k++)
    len += lists[k].n;
  varint(b, 2u << 3 | 2); /* SceneUpdate.entities */
  varint(b, len);
  pa_fox_buf_put(b, tsb.p, tsb.n);
  pa_fox_buf_put(b, head->p, head->n);
  for (int k = 0; k < PA_FOX_PRIMS; k++)
    pa_fox_buf_put(b, lists[k].p, lists[k].n);
  if (tsb.oom)
    b->oom = true;
  pa_fox_buf_free(&tsb);
}

static void p_deletion(pa_fox_buf *b, size_t n, uint64_t t_ns, const char *id) {
  (void)n;
  Google__Protobuf__Timestamp ts = GOOGLE__PROTOBUF__TIMESTAMP__INIT;
  pa_fox_pb_stamp(&ts, t_ns);
  Foxglove__SceneEntityDeletion d = FOXGLOVE__SCENE_ENTITY_DELETION__INIT;
  d.timestamp = &ts;
  d.type = id ? FOXGLOVE__SCENE_ENTITY_DELETION__TYPE__MATCHING_ID
              : FOXGLOVE__SCENE_ENTITY_DELETION__TYPE__ALL;
  d.id = (char *)(id ? id : "");
  put_msg(b, 1, &d); /* SceneUpdate.deletions */
}

static void p_part(pa_fox_buf *b, int part) {
  (void)b, (void)part; /* a message of fields has no framing */
}

const pa_fox_scene_be pa_fox_scene_pb = {p_head, p_prim, p_entity, p_deletion,
                                         p_part};
