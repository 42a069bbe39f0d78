/* udp.c - UDP feedback frames (PROTOCOL.md section 2, compat) and a sender
 * that batches datagrams into sendmmsg calls and never blocks. */
#define _GNU_SOURCE
#include "netgw.h"
#include "netgw_int.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "frames are little-endian and encoded with memcpy: port the encoders"
#endif

static void put(uint8_t *out, size_t off, const void *v, size_t n) {
  memcpy(out + off, v, n);
}

void pa_netgw_odom_encode(uint8_t out[PA_ODOM_FRAME_SIZE], uint32_t seq,
                          double t, float x, float y, float theta, float v,
                          float w) {
  memcpy(out, "ODM1", 4);
  put(out, 4, &seq, 4);
  put(out, 8, &t, 8);
  put(out, 16, &x, 4);
  put(out, 20, &y, 4);
  put(out, 24, &theta, 4);
  put(out, 28, &v, 4);
  put(out, 32, &w, 4);
}

void pa_netgw_scan_header(uint8_t out[PA_SCAN_HEADER_SIZE], const pa_scan *s) {
  memcpy(out, "SCN1", 4);
  put(out, 4, &s->seq, 4);
  put(out, 8, &s->sim_time, 8);
  put(out, 16, &s->angle_min, 4);
  put(out, 20, &s->angle_increment, 4);
  put(out, 24, &s->range_min, 4);
  put(out, 28, &s->range_max, 4);
  put(out, 32, &s->count, 4);
}

uint32_t pa_netgw_cam_chunk_count(uint32_t size, uint32_t chunk) {
  if (chunk == 0)
    return 0;
  uint64_t n = ((uint64_t)size + chunk - 1) / chunk;
  if (n == 0)
    n = 1; /* an empty image still announces itself */
  return n > 65535 ? 0 : (uint32_t)n;
}

void pa_netgw_cam_header(uint8_t out[PA_CAM_HEADER_SIZE], const pa_frame *f,
                         uint32_t chunk, uint32_t idx, uint32_t count,
                         uint32_t *off, uint32_t *len) {
  uint32_t o = idx * chunk;
  uint32_t l = o < f->size ? f->size - o : 0;
  if (l > chunk)
    l = chunk;
  uint16_t w = f->width, h = f->height, i16 = (uint16_t)idx,
           c16 = (uint16_t)count;
  memcpy(out, "CAM1", 4);
  put(out, 4, &f->seq, 4);
  put(out, 8, &w, 2);
  put(out, 10, &h, 2);
  put(out, 12, &f->size, 4);
  put(out, 16, &o, 4);
  put(out, 20, &i16, 2);
  put(out, 22, &c16, 2);
  *off = o;
  *len = l;
}

uint32_t pa_netgw_odom_seq(uint64_t tick, double feedback_hz,
                           double control_hz) {
  if (!(control_hz > 0) || !(feedback_hz > 0))
    return 0;
  /* The epsilon keeps exact ratios (100/200) from flooring one tick late. */
  return (uint32_t)(uint64_t)floor((double)tick * feedback_hz / control_hz +
                                   1e-9);
}

/* ---- sender ---------------------------------------------------------------*/

int pa_udp_tx_open(pa_udp_tx *tx, char *err, size_t err_sz) {
  memset(tx, 0, sizeof *tx);
  tx->fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (tx->fd < 0) {
    snprintf(err, err_sz, "udp socket: %s", strerror(errno));
    return -1;
  }
  int sz = 4 << 20; /* room for a few camera images; the kernel may clamp */
  setsockopt(tx->fd, SOL_SOCKET, SO_SNDBUF, &sz, sizeof sz);
  return 0;
}

void pa_udp_tx_close(pa_udp_tx *tx) {
  if (tx->fd >= 0)
    close(tx->fd);
  tx->fd = -1;
}

void pa_udp_tx_add(pa_udp_tx *tx, const struct sockaddr_in *to,
                   const void *hdr, size_t hlen, const void *payload,
                   size_t plen) {
  if (tx->n == PA_UDP_BATCH)
    pa_udp_tx_flush(tx);
  int i = tx->n++;
  memcpy(tx->hdr[i], hdr, hlen);
  tx->addr[i] = *to;
  tx->iov[i][0].iov_base = tx->hdr[i];
  tx->iov[i][0].iov_len = hlen;
  tx->iov[i][1].iov_base = (void *)payload;
  tx->iov[i][1].iov_len = plen;
  memset(&tx->msgs[i], 0, sizeof tx->msgs[i]);
  tx->msgs[i].msg_hdr.msg_name = &tx->addr[i];
  tx->msgs[i].msg_hdr.msg_namelen = sizeof tx->addr[i];
  tx->msgs[i].msg_hdr.msg_iov = tx->iov[i];
  tx->msgs[i].msg_hdr.msg_iovlen = plen ? 2 : 1;
}

void pa_udp_tx_flush(pa_udp_tx *tx) {
  int done = 0;
  while (done < tx->n) {
    int r = sendmmsg(tx->fd, tx->msgs + done, (unsigned)(tx->n - done),
                     MSG_DONTWAIT);
    if (r > 0) {
      for (int k = done; k < done + r; k++) {
        tx->sent++;
        tx->bytes += tx->iov[k][0].iov_len +
                     (tx->msgs[k].msg_hdr.msg_iovlen > 1 ? tx->iov[k][1].iov_len
                                                         : 0);
      }
      done += r;
      continue;
    }
    if (r < 0 && errno == EINTR)
      continue;
    if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == ENOBUFS)) {
      /* The socket buffer is full: the rest of this batch is stale anyway. */
      tx->dropped += (uint64_t)(tx->n - done);
      break;
    }
    /* This one datagram failed (e.g. EMSGSIZE): count it and go on. */
    tx->dropped++;
    done++;
  }
  tx->n = 0;
}
