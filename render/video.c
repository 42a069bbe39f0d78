/* video.c - MP4 files from RGB frames with FFmpeg's libraries (libavcodec,
 * libavformat, libswscale): H.264 through libx264 when this libavcodec has
 * it, MPEG-4 part 2 in the MP4 otherwise (the codec is reported).
 *
 * The MP4 is fragmented (an empty moov first, then a moof + mdat per
 * keyframe, one a second): a pa-render killed mid-recording leaves a file
 * that plays up to its last complete fragment. */
#include "render_int.h"

#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavutil/imgutils.h>
#include <libavutil/opt.h>
#include <libswscale/swscale.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct pa_video {
  AVFormatContext *oc;
  AVCodecContext *cc;
  AVStream *st;
  AVFrame *fr;
  AVPacket *pkt;
  struct SwsContext *sws;
  uint32_t w, h;
  int64_t pts;
  bool header, io;
};

static void av_err(char *err, size_t err_sz, const char *what, int rc) {
  char b[AV_ERROR_MAX_STRING_SIZE];
  av_strerror(rc, b, sizeof b);
  snprintf(err, err_sz, "video: %s: %s", what, b);
}

/* Sends f (NULL = flush) and writes every packet the encoder gives back. */
static int encode(pa_video *v, AVFrame *f, char *err, size_t err_sz) {
  int rc = avcodec_send_frame(v->cc, f);
  if (rc < 0) {
    av_err(err, err_sz, "avcodec_send_frame", rc);
    return -1;
  }
  for (;;) {
    rc = avcodec_receive_packet(v->cc, v->pkt);
    if (rc == AVERROR(EAGAIN) || rc == AVERROR_EOF)
      return 0;
    if (rc < 0) {
      av_err(err, err_sz, "avcodec_receive_packet", rc);
      return -1;
    }
    /* One frame period each: without it the MP4's edit list cuts the
     * last frame off. */
    if (v->pkt->duration <= 0)
      v->pkt->duration = 1;
    av_packet_rescale_ts(v->pkt, v->cc->time_base, v->st->time_base);
    v->pkt->stream_index = v->st->index;
    rc = av_interleaved_write_frame(v->oc, v->pkt);
    if (rc < 0) {
      av_err(err, err_sz, "writing a frame", rc);
      return -1;
    }
  }
}

int pa_video_open(pa_video **out, const char *path, uint32_t w, uint32_t h,
                  int fps, char *codec, size_t codec_sz, char *err,
                  size_t err_sz) {
  *out = NULL;
  if (w < 16 || h < 16 || (w & 1) || (h & 1) || fps < 1 || fps > 240) {
    snprintf(err, err_sz, "video: %ux%u at %d fps: sizes must be even, >= 16",
             w, h, fps);
    return -1;
  }
  pa_video *v = calloc(1, sizeof *v);
  if (!v) {
    snprintf(err, err_sz, "video: out of memory");
    return -1;
  }
  v->w = w, v->h = h;
  int rc = avformat_alloc_output_context2(&v->oc, NULL, "mp4", path);
  if (rc < 0 || !v->oc) {
    av_err(err, err_sz, "mp4 muxer", rc);
    goto fail;
  }
  const AVCodec *c = avcodec_find_encoder_by_name("libx264");
  if (!c)
    c = avcodec_find_encoder(AV_CODEC_ID_H264);
  if (!c)
    c = avcodec_find_encoder(AV_CODEC_ID_MPEG4);
  if (!c) {
    snprintf(err, err_sz, "video: no H.264 or MPEG-4 encoder in libavcodec");
    goto fail;
  }
  snprintf(codec, codec_sz, "%s", c->id == AV_CODEC_ID_H264 ? "h264" : "mpeg4");
  v->cc = avcodec_alloc_context3(c);
  v->st = avformat_new_stream(v->oc, NULL);
  v->fr = av_frame_alloc();
  v->pkt = av_packet_alloc();
  if (!v->cc || !v->st || !v->fr || !v->pkt) {
    snprintf(err, err_sz, "video: out of memory");
    goto fail;
  }
  v->cc->width = (int)w;
  v->cc->height = (int)h;
  v->cc->time_base = (AVRational){1, fps};
  v->cc->framerate = (AVRational){fps, 1};
  v->cc->pix_fmt = AV_PIX_FMT_YUV420P;
  v->cc->gop_size = fps; /* a keyframe, so a fragment, each second */
  if (c->id == AV_CODEC_ID_MPEG4)
    v->cc->bit_rate = (int64_t)w * h * fps / 4;
  if (v->oc->oformat->flags & AVFMT_GLOBALHEADER)
    v->cc->flags |= AV_CODEC_FLAG_GLOBAL_HEADER;
  /* Fastest: the encoder must keep up on a loaded CPU (frames it cannot
   * take are dropped and counted by the caller). */
  if (c->id == AV_CODEC_ID_H264)
    av_opt_set(v->cc->priv_data, "preset", "ultrafast", 0);
  if ((rc = avcodec_open2(v->cc, c, NULL)) < 0) {
    av_err(err, err_sz, "opening the encoder", rc);
    goto fail;
  }
  if ((rc = avcodec_parameters_from_context(v->st->codecpar, v->cc)) < 0) {
    av_err(err, err_sz, "stream parameters", rc);
    goto fail;
  }
  v->st->time_base = v->cc->time_base;
  if ((rc = avio_open(&v->oc->pb, path, AVIO_FLAG_WRITE)) < 0) {
    av_err(err, err_sz, path, rc);
    goto fail;
  }
  v->io = true;
  /* Each fragment goes to the file when complete, not when the avio buffer
   * fills: a crash loses at most the fragment being built. */
  v->oc->flags |= AVFMT_FLAG_FLUSH_PACKETS;
  AVDictionary *mo = NULL;
  av_dict_set(&mo, "movflags", "frag_keyframe+empty_moov+default_base_moof", 0);
  rc = avformat_write_header(v->oc, &mo);
  av_dict_free(&mo);
  if (rc < 0) {
    av_err(err, err_sz, "mp4 header", rc);
    goto fail;
  }
  v->header = true;
  v->fr->format = AV_PIX_FMT_YUV420P;
  v->fr->width = (int)w;
  v->fr->height = (int)h;
  if ((rc = av_frame_get_buffer(v->fr, 0)) < 0) {
    av_err(err, err_sz, "frame buffer", rc);
    goto fail;
  }
  v->sws = sws_getContext((int)w, (int)h, AV_PIX_FMT_RGB24, (int)w, (int)h,
                          AV_PIX_FMT_YUV420P, SWS_BILINEAR, NULL, NULL, NULL);
  if (!v->sws) {
    snprintf(err, err_sz, "video: no RGB -> YUV420P conversion");
    goto fail;
  }
  *out = v;
  return 0;
fail:
  pa_video_close(v, NULL, 0);
  return -1;
}

int pa_video_add(pa_video *v, const uint8_t *rgb, int64_t pts, char *err,
                 size_t err_sz) {
  int rc = av_frame_make_writable(v->fr);
  if (rc < 0) {
    av_err(err, err_sz, "frame", rc);
    return -1;
  }
  const uint8_t *src[1] = {rgb};
  const int stride[1] = {(int)v->w * 3};
  sws_scale(v->sws, src, stride, 0, (int)v->h, v->fr->data, v->fr->linesize);
  if (pts < v->pts) {
    snprintf(err, err_sz, "video: pts %lld after %lld", (long long)pts,
             (long long)v->pts);
    return -1;
  }
  v->fr->pts = pts;
  v->pts = pts + 1;
  return encode(v, v->fr, err, err_sz);
}

int pa_video_close(pa_video *v, char *err, size_t err_sz) {
  if (!v)
    return 0;
  int ret = 0;
  char tmp[256];
  if (!err)
    err = tmp, err_sz = sizeof tmp;
  if (v->header) {
    if (encode(v, NULL, err, err_sz) < 0)
      ret = -1;
    int rc = av_write_trailer(v->oc);
    if (rc < 0 && ret == 0) {
      av_err(err, err_sz, "mp4 trailer", rc);
      ret = -1;
    }
  }
  if (v->io)
    avio_closep(&v->oc->pb);
  sws_freeContext(v->sws);
  av_frame_free(&v->fr);
  av_packet_free(&v->pkt);
  avcodec_free_context(&v->cc);
  avformat_free_context(v->oc);
  free(v);
  return ret;
}
