/* foxglove_pb.c - the protobuf encoding of the Foxglove channels that
 * carry the most bytes (--foxglove_encoding protobuf): foxglove.LaserScan
 * and foxglove.CompressedImage (foxglove.SceneUpdate is
 * foxglove_scene_be.c's), packed by protoc-c from our own .proto
 * files (netgw/foxglove/proto, written to match the published foxglove
 * schemas), advertised with the FileDescriptorSet protoc built of them at
 * build time (embedded as pa_fox_fds). */
#define _GNU_SOURCE
#include "foxglove.h"
#include "netgw_int.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "foxglove/CompressedImage.pb-c.h"
#include "foxglove/LaserScan.pb-c.h"

extern const unsigned char pa_fox_fds[];
extern const size_t pa_fox_fds_len;

bool pa_fox_pb_kind(const pa_netgw *g, int kind) {
  const char *e = g->def.foxglove_encoding;
  return e && !strcmp(e, "protobuf") &&
         (kind == PA_FOX_SCAN || kind == PA_FOX_CAMERA || kind == PA_FOX_SCENE);
}

const uint8_t *pa_fox_pb_fds(size_t *len) {
  *len = pa_fox_fds_len;
  return pa_fox_fds;
}

const char *pa_fox_pb_schema_b64(void) {
  static pa_fox_buf b64; /* built once, kept for the process's life */
  if (!b64.n)
    pa_fox_base64(&b64, pa_fox_fds, pa_fox_fds_len);
  return b64.oom ? "" : b64.p;
}

/* protoc-c packs straight into a pa_fox_buf. */
typedef struct {
  ProtobufCBuffer base;
  pa_fox_buf *b;
} fox_pbuf;

static void pbuf_append(ProtobufCBuffer *buf, size_t n, const uint8_t *d) {
  pa_fox_buf_put(((fox_pbuf *)buf)->b, d, n);
}

void pa_fox_pb_pack(pa_fox_buf *b, const void *msg) {
  fox_pbuf pb = {{pbuf_append}, b};
  protobuf_c_message_pack_to_buffer(msg, &pb.base);
}

void pa_fox_pb_stamp(void *timestamp, uint64_t t_ns) {
  Google__Protobuf__Timestamp *ts = timestamp;
  ts->seconds = (int64_t)(t_ns / 1000000000u);
  ts->nanos = (int32_t)(t_ns % 1000000000u);
}

void pa_fox_pb_scan(pa_fox_buf *b, const char *robot, const pa_scan *s) {
  const float *r = (const float *)(s + 1);
  double *ranges = malloc((s->count ? s->count : 1) * sizeof *ranges);
  if (!ranges) {
    b->oom = true;
    return;
  }
  /* no return (pa-sim: range_max) is +inf: not a point anywhere */
  for (uint32_t i = 0; i < s->count; i++)
    ranges[i] = r[i] < s->range_max ? (double)r[i] : INFINITY;
  char frame[64];
  snprintf(frame, sizeof frame, "%s/laser", robot);
  Google__Protobuf__Timestamp ts = GOOGLE__PROTOBUF__TIMESTAMP__INIT;
  pa_fox_pb_stamp(&ts, pa_fox_ns(s->sim_time));
  Foxglove__Vector3 pos = FOXGLOVE__VECTOR3__INIT;
  Foxglove__Quaternion rot = FOXGLOVE__QUATERNION__INIT;
  rot.w = 1;
  Foxglove__Pose pose = FOXGLOVE__POSE__INIT;
  pose.position = &pos;
  pose.orientation = &rot;
  Foxglove__LaserScan m = FOXGLOVE__LASER_SCAN__INIT;
  m.timestamp = &ts;
  m.frame_id = frame;
  m.pose = &pose;
  m.start_angle = s->angle_min;
  m.end_angle = (double)s->angle_min +
                (double)s->angle_increment * (s->count ? s->count - 1 : 0);
  m.n_ranges = s->count;
  m.ranges = ranges;
  pa_fox_pb_pack(b, &m);
  free(ranges);
}

void pa_fox_pb_image(pa_fox_buf *b, const char *robot, const pa_frame *f,
                     const uint8_t *jpeg, size_t n) {
  char frame[64];
  snprintf(frame, sizeof frame, "%s/camera_optical", robot);
  Google__Protobuf__Timestamp ts = GOOGLE__PROTOBUF__TIMESTAMP__INIT;
  pa_fox_pb_stamp(&ts, pa_fox_ns(f->sim_time));
  Foxglove__CompressedImage m = FOXGLOVE__COMPRESSED_IMAGE__INIT;
  m.timestamp = &ts;
  m.frame_id = frame;
  m.format = "jpeg";
  m.data.data = (uint8_t *)jpeg;
  m.data.len = n;
  pa_fox_pb_pack(b, &m);
}
