/* json_obs_block.c - step_batch's binary reply: the robots' states and
 * newest scans as one block of the observation format (pa_layout.h:
 * PA_OBS_*, pa_obs_row), the scans read from the scan ring in place while
 * it holds them. */
#define _GNU_SOURCE
#include "json_int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Where each robot's newest scan is: in the scan ring (src[i] in place, its
 * header copied into hd[i], seq[i] its record) while the ring holds it, else
 * in the gateway's cache (seq[i] 0; drained once), else nowhere (src NULL).
 * Reading the ring skips the cache's two copies of 1,000 scans per reply. */
static void find_scans(pa_netgw *g, const uint32_t *ids, size_t n, bool ring,
                       int32_t *row, pa_scan *hd, const float **src,
                       uint64_t *seq) {
  uint32_t max = g->ctl->def.max_robots;
  size_t left = n;
  for (size_t i = 0; i < n; i++) {
    src[i] = NULL;
    seq[i] = 0;
    row[ids[i]] = (int32_t)i; /* ids are distinct and < max */
  }
  const pa_ring *r = g->st->scan;
  uint64_t head = ring ? pa_ring_head(r) : 0;
  uint64_t slots = pa_ring_slot_count(r);
  for (uint64_t k = head; left && k >= 1 && head - k < slots; k--) {
    uint32_t l;
    const char *rec = pa_ring_peek(r, k, &l);
    pa_scan h;
    if (!rec || l < sizeof h)
      continue;
    memcpy(&h, rec, sizeof h); /* checked again after the copies */
    int32_t i = h.robot < max ? row[h.robot] : -1;
    if (i < 0 || src[i] || sizeof h + (uint64_t)h.count * 4 > l)
      continue;
    hd[i] = h;
    src[i] = (const float *)(const void *)(rec + sizeof h);
    seq[i] = k;
    left--;
  }
  if (left)
    pa_gw_drain_scans(g);
  for (size_t i = 0; left && i < n; i++) {
    const pa_scan *cs = (const pa_scan *)g->scan_cache[ids[i]];
    if (src[i] || !cs)
      continue;
    hd[i] = *cs;
    src[i] = (const float *)(const void *)(cs + 1);
    left--;
  }
  for (size_t i = 0; i < n; i++)
    row[ids[i]] = -1;
}

/* The binary block of the robots' states in t and newest scans into *blk
 * (malloc'd): 0, 1 when a scan read from the ring was overwritten while
 * copied (nothing returned: read from the cache then), -1 out of memory. */
int pa_json_obs_block(pa_netgw *g, const pa_tick *t, const uint32_t *ids,
                      size_t n, bool ring, uint32_t sectors, char **blk,
                      size_t *len, uint32_t *beams) {
  uint32_t max = g->ctl->def.max_robots;
  int32_t *row = malloc(max * sizeof *row);
  pa_scan *hd = malloc(n * sizeof *hd);
  const float **src = malloc(n * sizeof *src);
  uint64_t *seq = malloc(n * sizeof *seq);
  char *b = NULL;
  int rc = -1;
  if (!row || !hd || !src || !seq)
    goto out;
  memset(row, 0xff, max * sizeof *row); /* -1: not asked for */
  find_scans(g, ids, n, ring, row, hd, src, seq);
  /* The widest scan sets the beam count; shorter ones are padded with NaN. */
  uint32_t w = 0;
  for (size_t i = 0; i < n; i++)
    if (src[i] && hd[i].count > w)
      w = hd[i].count;
  if (sectors && w) /* any scan: every row `sectors` wide */
    w = sectors;
  size_t sz = PA_OBS_HEADER + n * (PA_OBS_FIELDS * 8 + (size_t)w * 4);
  if (!(b = malloc(sz)))
    goto out;
  uint32_t head[3] = {(uint32_t)n, w, PA_OBS_FIELDS};
  memcpy(b, PA_OBS_MAGIC, 4);
  memcpy(b + 4, head, sizeof head);
  char *rows = b + PA_OBS_HEADER;
  char *ranges = rows + n * PA_OBS_FIELDS * 8;
  for (size_t i = 0; i < n; i++) {
    const pa_scan *s = src[i] ? &hd[i] : NULL;
    if (i + 1 < n && src[i + 1]) /* the next one's ranges, while these go */
      pa_obs_prefetch(src[i + 1], hd[i + 1].count);
    double range_max = 0;
    if (!s) { /* its range_max from the robot's info until it has scanned */
      pa_robot_info info;
      uint32_t idx;
      memset(&info, 0, sizeof info);
      pa_gw_robot(g, NULL, (long)ids[i], &info, &idx);
      range_max = info.laser_range_max;
    }
    double f[PA_OBS_FIELDS];
    pa_obs_row(f, pa_gw_robot_state(t, ids[i]), s, range_max);
    pa_obs_ranges((float *)(void *)(ranges + i * (size_t)w * 4), w, f,
                  s ? src[i] : NULL, s ? s->count : 0, sectors);
    memcpy(rows + i * PA_OBS_FIELDS * 8, f, sizeof f);
  }
  rc = 0;
  for (size_t i = 0; i < n && rc == 0; i++)
    if (seq[i] && !pa_ring_still(g->st->scan, seq[i]))
      rc = 1;
  if (rc == 0) {
    *blk = b;
    *len = sz;
    *beams = w;
    b = NULL;
  }
out:
  free(b);
  free(row);
  free(hd);
  free(src);
  free(seq);
  return rc;
}
