/* ask.c - the one way to ask pa-sim: every command any front-end sends goes
 * through pa_core_push (request ids, the queue's share of its source, the
 * on_command hooks); pa_core_ask also keeps the outstanding requests (their
 * done callbacks and timeouts) and matches pa-sim's replies to them. */
#define _GNU_SOURCE
#include "netgw_int.h"

#include "pa_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* An outstanding request: rows are appended in request id order. */
typedef struct pa_ask_row {
  uint64_t req;
  int64_t deadline; /* [ns] */
  unsigned timeout_ms;
  pa_ask_done done; /* NULL: answered (dropped when compacted) */
  void *arg;
  uint64_t tag;
} pa_ask_row;

/* Every command pushed to pa-sim, to the front-ends that watch them (a
 * recording's /commands). */
static void note_command(pa_netgw *g, const pa_cmd *cmd) {
  for (const pa_frontend *const *f = pa_frontends; *f; f++)
    if ((*f)->on_command)
      (*f)->on_command(g, cmd);
}

int pa_core_push(pa_netgw *g, int source, uint64_t client_id, pa_cmd *cmds,
                 size_t n) {
  for (size_t i = 0; i < n; i++) {
    cmds[i].client_id = client_id;
    cmds[i].request_id = g->next_req + 1 + i;
  }
  if (pa_lim_queue_push(g, source, cmds, n) != 0) {
    snprintf(g->busy_msg, sizeof g->busy_msg, "the command queue is full");
    return -1;
  }
  g->next_req += n;
  for (size_t i = 0; i < n; i++)
    note_command(g, &cmds[i]);
  return 0;
}

/* The timer for the earliest deadline of the rows. */
static void arm(pa_netgw *g) {
  int64_t first = INT64_MAX;
  for (size_t i = 0; i < g->n_asks; i++)
    if (g->asks[i].done && g->asks[i].deadline < first)
      first = g->asks[i].deadline;
  if (first == INT64_MAX) {
    evtimer_del(g->ask_ev);
    return;
  }
  int64_t d = first - pa_now_ns();
  if (d < 0)
    d = 0;
  struct timeval tv = {(time_t)(d / 1000000000),
                       (suseconds_t)(d % 1000000000 / 1000)};
  evtimer_add(g->ask_ev, &tv);
  g->ask_armed = first;
}

/* Drops the answered rows (none while a scan walks them). */
static void compact(pa_netgw *g) {
  if (g->ask_scanning)
    return;
  size_t k = 0;
  for (size_t i = 0; i < g->n_asks; i++)
    if (g->asks[i].done)
      g->asks[k++] = g->asks[i];
  g->n_asks = k;
}

/* Room for n rows more: the answered ones dropped, and the table doubled
 * while over half of it still waits (so that compacting stays rare). */
static int add_rows(pa_netgw *g, size_t n) {
  if (g->n_asks + n <= g->cap_asks)
    return 0;
  compact(g);
  if (g->n_asks + n <= g->cap_asks / 2)
    return 0;
  size_t cap = g->cap_asks ? g->cap_asks : 64;
  while (cap < 2 * (g->n_asks + n))
    cap *= 2;
  if (cap > PA_ASK_MAX)
    return g->n_asks + n <= g->cap_asks ? 0 : -1;
  pa_ask_row *r = realloc(g->asks, cap * sizeof *r);
  if (!r)
    return -1;
  g->asks = r;
  g->cap_asks = cap;
  return 0;
}

int pa_core_ask(pa_netgw *g, int source, pa_cmd *cmds, size_t n,
                unsigned timeout_ms, pa_ask_done done, void *arg, uint64_t tag,
                char *err, size_t err_sz) {
  /* A client's command is "applied next tick" or busy at once; a datagram's
   * or a replay's waits for pa-sim (its timeout) as before. */
  if (source == PA_LIM_SRC_CLIENT && pa_gw_sim_stalled(g)) {
    snprintf(err, err_sz, "%s", g->busy_msg);
    return -1;
  }
  bool wait = timeout_ms > 0 && done;
  if (wait && add_rows(g, n) != 0) {
    snprintf(err, err_sz, "too many requests waiting for pa-sim");
    return -1;
  }
  for (size_t i = 0; i < n; i++)
    if (!wait)
      cmds[i].flags |= PA_CMDF_NO_REPLY;
  if (pa_core_push(g, source, PA_ASK_CLIENT_ID, cmds, n) != 0) {
    snprintf(err, err_sz, "%s", g->busy_msg);
    return -1;
  }
  if (!wait)
    return 0;
  int64_t deadline = pa_now_ns() + (int64_t)timeout_ms * 1000000;
  for (size_t i = 0; i < n; i++)
    g->asks[g->n_asks++] = (pa_ask_row){.req = cmds[i].request_id,
                                        .deadline = deadline,
                                        .timeout_ms = timeout_ms,
                                        .done = done,
                                        .arg = arg,
                                        .tag = tag};
  if (!evtimer_pending(g->ask_ev, NULL) || deadline < g->ask_armed)
    arm(g);
  return 0;
}

/* The waiting row of request req, or NULL (rows are in request id order;
 * an answered one keeps its place, done NULL, until compacted). */
static pa_ask_row *find(pa_netgw *g, uint64_t req) {
  size_t lo = 0, hi = g->n_asks;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (g->asks[mid].req < req)
      lo = mid + 1;
    else
      hi = mid;
  }
  pa_ask_row *row = lo < g->n_asks ? &g->asks[lo] : NULL;
  return row && row->req == req && row->done ? row : NULL;
}

void pa_core_ask_reply(pa_netgw *g, const pa_reply *r) {
  pa_ask_row *row = find(g, r->request_id);
  if (!row) {
    g->late++; /* answered busy at its timeout */
    return;
  }
  pa_ask_row k = *row;
  row->done = NULL; /* k.done may ask again (and grow the rows) */
  while (g->n_asks && !g->asks[g->n_asks - 1].done)
    g->n_asks--;
  pa_status st;
  char msg[160];
  if (!pa_gw_reply_error(g, r, &st, msg, sizeof msg)) {
    st = PA_OK;
    msg[0] = 0;
  }
  k.done(g, k.arg, k.tag, r, st, msg);
}

static void on_timeout(evutil_socket_t fd, short what, void *arg) {
  (void)fd, (void)what;
  pa_netgw *g = arg;
  int64_t t0 = pa_now_ns();
  g->ask_scanning = true;
  for (size_t i = 0; i < g->n_asks; i++) {
    pa_ask_row *row = &g->asks[i];
    if (!row->done || row->deadline > t0)
      continue;
    pa_ask_row k = *row;
    row->done = NULL;
    char msg[96];
    snprintf(msg, sizeof msg, "the simulator did not answer within %u ms",
             k.timeout_ms);
    k.done(g, k.arg, k.tag, NULL, PA_ERR_BUSY, msg);
  }
  g->ask_scanning = false;
  compact(g);
  arm(g);
  pa_gw_account(g, t0);
}

int pa_core_ask_init(pa_netgw *g) {
  g->ask_ev = evtimer_new(g->base, on_timeout, g);
  return g->ask_ev ? 0 : -1;
}

void pa_core_ask_free(pa_netgw *g) {
  /* the front-ends have stopped: their callbacks only let go */
  for (size_t i = 0; i < g->n_asks; i++) {
    pa_ask_row k = g->asks[i];
    if (!k.done)
      continue;
    g->asks[i].done = NULL;
    k.done(g, k.arg, k.tag, NULL, PA_ERR_BUSY, "pa-netgw stops");
  }
  free(g->asks);
  g->asks = NULL;
  g->n_asks = g->cap_asks = 0;
  if (g->ask_ev)
    event_free(g->ask_ev);
  g->ask_ev = NULL;
}
