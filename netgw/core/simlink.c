/* simlink.c - the sim round trip: commands into pa-sim's queue (text drive
 * commands coalesced), replies out of its reply queue to the client that
 * waits, and the timeout that answers busy when none comes. */
#define _GNU_SOURCE
#include "netgw_int.h"

#include "pa_util.h"

#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <netinet/tcp.h>
#include <sched.h>
#include <semaphore.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <event2/buffer.h>

_Static_assert(PA_NETGW_STEP_MAX == PA_CMD_STEPS_MAX,
               "netgw and pa-sim take the same step counts");

/* ---- the sim round trip
 * --------------------------------------------------------*/

static int push_raw(pa_client *c, pa_cmd *cmd) {
  return pa_core_push(c->g, PA_LIM_SRC_CLIENT, c->id, cmd, 1);
}

/* Pushes the coalesced drive command, if any: 0, or -1 when still queued. */
int pa_gw_flush_drive(pa_client *c) {
  if (!c->drive_pending)
    return 0;
  if (push_raw(c, &c->drive) != 0)
    return -1;
  c->drive_pending = false;
  return 0;
}

void pa_gw_on_drive_retry(evutil_socket_t fd, short what, void *arg) {
  (void)fd, (void)what;
  pa_client *c = arg;
  if (pa_gw_flush_drive(c) != 0) {
    struct timeval tv = {0, 2000}; /* only while pa-sim lags behind */
    evtimer_add(c->drive_ev, &tv);
  }
}

/* Keeps the latest text drive command of this burst (flushed after it). */
void pa_gw_set_drive(pa_client *c, const pa_cmd *cmd) {
  if (c->drive_pending && c->drive.robot != cmd->robot)
    pa_gw_flush_drive(c); /* another robot's command must not be overwritten */
  if (c->drive_pending && c->drive.robot != cmd->robot) {
    /* The queue is full and the older robot's command would be replaced:
     * say so (text cmd has no reply when it is applied). */
    c->g->busy++;
    char msg[96];
    snprintf(msg, sizeof msg,
             "the command queue is full: the cmd for robot %u was dropped",
             c->drive.robot);
    pa_core_control_fe(false)->line_error(c, PA_ERR_BUSY, msg);
  }
  c->drive = *cmd;
  c->drive.flags |= PA_CMDF_NO_REPLY;
  c->drive_pending = true;
}

/* Keeps order: a held drive command goes before anything newer. */
static int push(pa_client *c, pa_cmd *cmd) {
  if (pa_gw_flush_drive(c) != 0)
    return -1;
  return push_raw(c, cmd);
}

int pa_gw_push_nowait(pa_client *c, pa_cmd *cmd) {
  /* Its ok means "applied next tick": not true of a stopped pa-sim. (A
   * waited-for command gets busy from its timeout, or the reply if pa-sim
   * comes back in time.) */
  if (pa_gw_sim_stalled(c->g))
    return -1;
  cmd->flags |= PA_CMDF_NO_REPLY;
  return push(c, cmd);
}

int pa_gw_push_many_nowait(pa_client *c, pa_cmd *cmds, size_t n) {
  pa_netgw *g = c->g;
  /* judged once: a step_batch's 1,000 commands read the clock once */
  if (pa_gw_sim_stalled(g) || pa_gw_flush_drive(c) != 0)
    return -1;
  for (size_t i = 0; i < n; i++)
    cmds[i].flags |= PA_CMDF_NO_REPLY;
  return pa_core_push(g, PA_LIM_SRC_CLIENT, c->id, cmds, n);
}

bool pa_gw_reply_error(const pa_netgw *g, const pa_reply *r, pa_status *st,
                       char *msg, size_t msg_sz) {
  if (!r) {
    *st = PA_ERR_BUSY;
    snprintf(msg, msg_sz, "the simulator did not answer within %u ms",
             g->def.request_timeout_ms);
    return true;
  }
  if (r->status == PA_OK)
    return false;
  *st = r->status > 0 && r->status < PA_STATUS_COUNT ? (pa_status)r->status
                                                     : PA_ERR_INVALID_MESSAGE;
  /* r->msg comes from another process: bounded, NUL or not */
  int n = (int)strnlen(r->msg, sizeof r->msg);
  if (n)
    snprintf(msg, msg_sz, "%.*s", n, r->msg);
  else
    snprintf(msg, msg_sz, "rejected by the simulator");
  return true;
}

/* A short lockstep step comes back in tens of microseconds: watching the
 * reply queue that long saves the thread and eventfd wake-ups (~100 us on a
 * busy machine). Bounded, and only right after such a step was pushed, while
 * the client is waiting for it anyway. */
#define STEP_SPIN_NS 100000
/* After a lockstep reply the loop polls at least this long when the
 * client's recent think times were under STEP_SPIN_NS. */
#define WATCH_MIN_NS 20000

int pa_gw_push_wait(pa_client *c, pa_cmd *cmd) {
  if (push(c, cmd) != 0)
    return -1;
  c->pend_req = cmd->request_id;
  c->pend_robot = cmd->robot;
  c->pend_ticks = 0;
  if (cmd->op == PA_OP_STEP && cmd->step.ticks > 0) {
    /* Watch for the reply only when it is due within the spin bound, by the
     * latency per tick the last STEPs took (few robots: microseconds). */
    c->pend_ticks = cmd->step.ticks;
    c->pend_t0 = pa_now_ns();
    pa_netgw *g = c->g;
    if (g->step_sent_ns) { /* the client's think time after the last reply */
      int64_t gap = c->pend_t0 - g->step_sent_ns;
      gap = gap > 4 * STEP_SPIN_NS ? 4 * STEP_SPIN_NS : gap;
      g->step_gap_ns += (gap - g->step_gap_ns) / 8;
      g->step_sent_ns = 0;
    }
    if ((double)cmd->step.ticks * (double)c->g->step_tick_ns < STEP_SPIN_NS)
      c->g->spin_hint = true;
  }
  unsigned ms =
      c->pend_wait_ms ? c->pend_wait_ms : c->g->def.request_timeout_ms;
  c->pend_wait_ms = 0;
  struct timeval tv = {ms / 1000, (ms % 1000) * 1000};
  evtimer_add(c->timeout_ev, &tv);
  return 0;
}

static void complete(pa_client *c, const pa_reply *r) {
  int kind = c->pend;
  c->pend = PEND_NONE;
  evtimer_del(c->timeout_ev);
  bool step = false;
  if (r && c->pend_ticks) {
    pa_netgw *g = c->g;
    int64_t per = (pa_now_ns() - c->pend_t0) / (int64_t)c->pend_ticks;
    g->step_tick_ns += (per - g->step_tick_ns) / 4;
    c->pend_ticks = 0;
    step = true;
  }
  if (!r)
    c->g->busy++;
  c->g->direct_write = true; /* only this reply: later lines batch up */
  pa_core_control_fe(kind == PEND_JSON)->complete(c, r);
  pa_gw_write_flush(c->g);
  c->g->direct_write = false;
  if (step) {
    /* A lockstep client's next STEP follows within its think time: the
     * loop polls that long (twice the usual gap, bounded) instead of
     * paying a wake-up for it. */
    pa_netgw *g = c->g;
    int64_t now = pa_now_ns();
    g->step_sent_ns = now;
    if (g->step_gap_ns < STEP_SPIN_NS)
      g->watch_until =
          now + (2 * g->step_gap_ns < WATCH_MIN_NS ? WATCH_MIN_NS
                                                   : 2 * g->step_gap_ns);
  }
  pa_gw_settle(c);
}

void pa_gw_on_timeout(evutil_socket_t fd, short what, void *arg) {
  (void)fd, (void)what;
  pa_client *c = arg;
  if (c->pend)
    complete(c, NULL); /* its late reply will find no one waiting for it */
}

void pa_gw_wait_local(pa_client *c, uint64_t req, unsigned ms) {
  c->pend_req = req;
  c->pend_robot = 0;
  c->pend_ticks = 0;
  struct timeval tv = {ms / 1000, (ms % 1000) * 1000};
  evtimer_add(c->timeout_ev, &tv);
}

void pa_gw_local_reply(pa_netgw *g, const pa_reply *r) {
  uint32_t slot = (uint32_t)(r->client_id & 0xffffffffu);
  pa_client *c = slot < g->slots ? g->clients[slot] : NULL;
  if (!c || c->id != r->client_id || !c->pend || c->pend_req != r->request_id) {
    g->late++;
    return;
  }
  complete(c, r);
}

void pa_gw_on_reply(void *arg) {
  pa_netgw *g = arg;
  pa_reply r;
  int64_t t0 = pa_now_ns();
  g->loops++;
  while (pa_queue_peek(g->st->reply, &r) >= 0) {
    pa_queue_pop(g->st->reply);
    if (r.client_id == PA_ASK_CLIENT_ID)
      pa_core_ask_reply(g, &r); /* a pa_core_ask of a front-end */
    else
      pa_gw_local_reply(g, &r);
  }
  g->spin_hint = false; /* only a step pushed from a client read is watched */
  pa_gw_account(g, t0);
}

void pa_gw_spin_for_reply(pa_netgw *g) {
  g->spin_hint = false;
  int64_t end = pa_now_ns() + STEP_SPIN_NS;
  /* While this loop polls, pa-sim does not post the reply queue's
   * semaphore: the post would wake the bridge thread, and it the loop, for
   * a reply read here (a futex wake and two thread wake-ups per step). */
  int64_t *watch = &g->st->ctl->reply_watch_until;
  __atomic_store_n(watch, end, __ATOMIC_SEQ_CST);
  bool got = false;
  do {
    if (pa_queue_count(g->st->reply) > 0) {
      got = true;
      break;
    }
    sched_yield(); /* lets pa-sim run if the scheduler put it on this core */
  } while (pa_now_ns() < end);
  __atomic_store_n(watch, 0, __ATOMIC_SEQ_CST);
  /* A post made anyway (the deadline passed first on pa-sim's side) is
   * taken so that it wakes nothing; every reply is read after it, and one
   * pushed before the 0 above without a post is seen here. */
  if (got)
    (void)sem_trywait(pa_queue_sem(g->st->reply));
  __atomic_thread_fence(__ATOMIC_SEQ_CST);
  if (got || pa_queue_count(g->st->reply) > 0)
    pa_gw_on_reply(g);
}
