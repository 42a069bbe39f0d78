/* ssl_ports.c - the SSL protocol's UDP ports: datagrams read and decoded
 * (their messages are ssl_gw.c's to check and turn into commands),
 * answered at once or when pa-sim has replied to all of a datagram's
 * commands (busy after --request_timeout_ms); the ports and the vision
 * socket opened with the SSL field and closed; the front-end row. */
#define _GNU_SOURCE
#include "ssl_int.h"

#include <arpa/inet.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ssl_simulation_control.pb-c.h"
#include "ssl_simulation_robot_control.pb-c.h"
#include "ssl_simulation_synchronous.pb-c.h"

#define SSL_DGRAM_MAX 65536
#define SSL_BURST 64 /* datagrams read per wake-up */

static void reply(pa_ssl_gw *x, int fd, const struct sockaddr_in *to, size_t n,
                  const ProtobufCMessage *m) {
  if (!pa_ssl_out_reserve(x, n))
    return;
  size_t len = protobuf_c_message_pack(m, x->out);
  ssize_t w = sendto(fd, x->out, len, MSG_DONTWAIT, (const struct sockaddr *)to,
                     sizeof *to);
  (void)w; /* a reply the kernel refuses is lost, as UDP may */
}

/* A synchronous port's response: the newest tick's detection frame (the
 * step's end) and the commands' errors and feedback. */
static void respond_sync(pa_ssl_gw *x, int s, const struct sockaddr_in *to,
                         ssl_errs *e, RobotFeedback **fbp, size_t nf) {
  SimulationSyncResponse r = SIMULATION_SYNC_RESPONSE__INIT;
  RobotControlResponse rc = ROBOT_CONTROL_RESPONSE__INIT;
  SSLDetectionFrame fr, *frp = &fr;
  SSLDetectionBall ball, *bp;
  const pa_tick *t = pa_gw_latest(x->g);
  if (t && t->ssl) {
    pa_ssl_vision_frame(x, t, &fr, &ball, &bp);
    r.n_detection = 1;
    r.detection = &frp;
  }
  for (size_t i = 0; i < nf; i++)
    pa_ssl_feedback_now(x, SSL_TEAM_OF(s), fbp[i]);
  rc.n_errors = e->n;
  rc.errors = e->p;
  rc.n_feedback = nf;
  rc.feedback = fbp;
  r.robot_control_response = &rc;
  reply(x, x->fd[s], to, simulation_sync_response__get_packed_size(&r),
        &r.base);
}

/* The response of a datagram: its errors (and a team port's feedback). */
static void respond(pa_ssl_gw *x, int s, const struct sockaddr_in *to,
                    ssl_errs *e, RobotFeedback **fbp, size_t nf) {
  if (s == S_SYNC_BLUE || s == S_SYNC_YELLOW) {
    respond_sync(x, s, to, e, fbp, nf);
  } else if (s == S_CONTROL) {
    SimulatorResponse r = SIMULATOR_RESPONSE__INIT;
    r.n_errors = e->n;
    r.errors = e->p;
    reply(x, x->fd[s], to, simulator_response__get_packed_size(&r), &r.base);
  } else {
    RobotControlResponse r = ROBOT_CONTROL_RESPONSE__INIT;
    r.n_errors = e->n;
    r.errors = e->p;
    r.n_feedback = nf;
    r.feedback = fbp;
    reply(x, x->fd[s], to, robot_control_response__get_packed_size(&r),
          &r.base);
  }
  x->errors += e->n;
}

static void pend_release(ssl_pend *p) {
  p->gen++; /* its commands' later answers find it gone */
  free(p->fb);
  free(p->fbp);
  p->fb = NULL;
  p->fbp = NULL;
  p->nf = 0;
  p->used = false;
}

static void pend_finish(ssl_pend *p) {
  respond(p->x, p->s, &p->from, &p->e, p->fbp, p->nf);
  pend_release(p);
}

uint64_t pa_ssl_tag(const pa_ssl_gw *x, const ssl_pend *p, uint32_t k) {
  uint64_t i = (uint64_t)(p - x->pend);
  return (uint64_t)p->gen << 32 | (uint64_t)(k < 0xffff ? k : 0xffff) << 8 | i;
}

void pa_ssl_done(pa_netgw *g, void *arg, uint64_t tag, const pa_reply *r,
                 pa_status st, const char *msg) {
  (void)arg, (void)st, (void)msg;
  pa_ssl_gw *x = g->ssl;
  if (!x || (tag & 0xff) >= SSL_PEND_MAX)
    return; /* the ports closed meanwhile */
  ssl_pend *p = &x->pend[tag & 0xff];
  if (!p->used || p->gen != (uint32_t)(tag >> 32))
    return; /* late: its datagram was answered busy */
  if (!r) {
    g->busy++;
    pa_ssl_err_add(&p->e, "busy",
                   "the simulator did not answer within %u ms (%u of %u "
                   "commands unanswered; they may still be applied)",
                   g->def.request_timeout_ms, p->waiting, p->sent);
    pend_finish(p);
    return;
  }
  if (r->status == PA_OK && r->op == PA_OP_TELEPORT_BALL && r->ssl.moved_from) {
    int n = (int)strnlen(r->msg, sizeof r->msg);
    pa_ssl_err_add(&p->e, "moved:teleport_ball",
                   "teleport_ball: %.*s (a ball cannot be inside a robot)", n,
                   r->msg);
  } else if (r->status != PA_OK) {
    uint32_t k = (uint32_t)(tag >> 8) & 0xffff;
    pa_status rs = r->status > 0 && r->status < PA_STATUS_COUNT
                       ? (pa_status)r->status
                       : PA_ERR_INVALID_MESSAGE;
    /* r->msg comes from another process: bounded, NUL or not */
    int n = (int)strnlen(r->msg, sizeof r->msg);
    pa_ssl_err_add(&p->e, pa_status_code(rs), "%s: %.*s",
                   k < SSL_PEND_CMDS ? p->what[k] : "command", n ? n : 24,
                   n ? r->msg : "refused by the simulator");
  }
  if (--p->waiting == 0)
    pend_finish(p);
}

static ssl_pend *pend_take(pa_ssl_gw *x) {
  for (int i = 0; i < SSL_PEND_MAX; i++)
    if (!x->pend[i].used) {
      ssl_pend *p = &x->pend[i];
      p->used = true;
      p->sent = p->waiting = 0;
      p->e.n = 0;
      p->nf = 0;
      return p;
    }
  return NULL; /* all waiting: this one's commands go without replies */
}

/* A RobotControl's commands for team (0 blue): each robot's feedback into
 * new arrays *fbp (of *nf; freed by the caller). */
static void robot_control(pa_ssl_gw *x, int team, const RobotControl *m,
                          ssl_errs *e, RobotFeedback **fbo,
                          RobotFeedback ***fbpo, size_t *nfo) {
  size_t nf = 0;
  RobotFeedback *fb = calloc(m->n_robot_commands, sizeof *fb);
  RobotFeedback **fbp = calloc(m->n_robot_commands, sizeof *fbp);
  if (!fb || !fbp)
    pa_ssl_err_add(e, "busy", "out of memory");
  uint32_t seen = 0; /* ids 0..15 with a command in this datagram */
  for (size_t i = 0; fb && fbp && i < m->n_robot_commands; i++) {
    uint32_t id = m->robot_commands[i]->id;
    if (id < 16 && (seen & 1u << id)) {
      /* one datagram of repeats would fill pa-sim's queue and a
       * response too big to send */
      pa_ssl_err_add(e, "invalid:robot_commands",
                     "%s robot %u has more than one command in this datagram "
                     "(the first is applied)",
                     pa_ssl_team_name(team), id);
      continue;
    }
    if (id < 16)
      seen |= 1u << id;
    RobotFeedback init = ROBOT_FEEDBACK__INIT;
    fb[nf] = init;
    fb[nf].id = UINT32_MAX;
    pa_ssl_robot_command(x, team, m->robot_commands[i], e, &fb[nf]);
    if (fb[nf].id != UINT32_MAX) {
      fbp[nf] = &fb[nf];
      nf++;
    }
  }
  *fbo = fb;
  *fbpo = fbp;
  *nfo = nf;
}

/* A synchronous port's request: the command, the team's robots, then the
 * step (all commands of this datagram, answered together). */
static void sync_request(pa_ssl_gw *x, int s, const uint8_t *buf, size_t n,
                         ssl_errs *e, RobotFeedback **fb, RobotFeedback ***fbp,
                         size_t *nf) {
  SimulationSyncRequest *m = simulation_sync_request__unpack(NULL, n, buf);
  if (!m) {
    pa_ssl_err_add(e, "invalid:message",
                   "not a SimulationSyncRequest (%zu bytes)", n);
    return;
  }
  if (m->simulator_command)
    pa_ssl_simulator_command(x, m->simulator_command, e);
  if (m->robot_control && m->robot_control->n_robot_commands)
    robot_control(x, SSL_TEAM_OF(s), m->robot_control, e, fb, fbp, nf);
  pa_ssl_sync_step(x, m->has_sim_step ? m->sim_step : 0, e);
  simulation_sync_request__free_unpacked(m, NULL);
}

static void on_datagram(pa_ssl_gw *x, int s, const uint8_t *buf, size_t n,
                        const struct sockaddr_in *from) {
  ssl_errs local;
  ssl_pend *p = pend_take(x);
  ssl_errs *e = p ? &p->e : &local;
  e->n = 0;
  x->cur = p;
  RobotFeedback *fb = NULL;
  RobotFeedback **fbp = NULL;
  size_t nf = 0;
  if (s == S_SYNC_BLUE || s == S_SYNC_YELLOW) {
    sync_request(x, s, buf, n, e, &fb, &fbp, &nf);
  } else if (s == S_CONTROL) {
    SimulatorCommand *m = simulator_command__unpack(NULL, n, buf);
    if (!m)
      pa_ssl_err_add(e, "invalid:message", "not a SimulatorCommand (%zu bytes)",
                     n);
    else
      pa_ssl_simulator_command(x, m, e);
    if (m)
      simulator_command__free_unpacked(m, NULL);
  } else {
    RobotControl *m = robot_control__unpack(NULL, n, buf);
    if (!m) {
      pa_ssl_err_add(e, "invalid:message", "not a RobotControl (%zu bytes)", n);
    } else if (m->n_robot_commands) {
      robot_control(x, SSL_TEAM_OF(s), m, e, &fb, &fbp, &nf);
    }
    if (m)
      robot_control__free_unpacked(m, NULL);
  }
  x->cur = NULL;
  if (p && p->waiting) { /* answered when pa-sim has replied to them all */
    p->s = s;
    p->from = *from;
    p->fb = fb;
    p->fbp = fbp;
    p->nf = nf;
    return;
  }
  respond(x, s, from, e, fbp, nf);
  free(fb);
  free(fbp);
  if (p)
    p->used = false;
}

static void on_readable(evutil_socket_t fd, short what, void *arg) {
  (void)what;
  pa_ssl_gw *x = arg;
  int s = 0;
  while (s < S_COUNT - 1 && fd != x->fd[s])
    s++;
  for (int k = 0; k < SSL_BURST; k++) {
    struct sockaddr_in from;
    socklen_t fl = sizeof from;
    ssize_t n = recvfrom(fd, x->rx, SSL_DGRAM_MAX, MSG_DONTWAIT,
                         (struct sockaddr *)&from, &fl);
    if (n < 0)
      break; /* EAGAIN, or an error the next datagram may not have */
    if (fl != sizeof from || from.sin_family != AF_INET)
      continue;
    on_datagram(x, s, x->rx, (size_t)n, &from);
  }
}

/* ---- setup ------------------------------------------------------------- */

int pa_ssl_gw_start(pa_netgw *g, char *err, size_t err_sz) {
  pa_tick hdr;
  const pa_tick *t = pa_gw_latest_header(g, &hdr) ? &hdr : NULL;
  if (!t || !t->ssl)
    return 0; /* no SSL field: no sockets */
  pa_ssl_gw *x = calloc(1, sizeof *x);
  if (!x) {
    snprintf(err, err_sz, "out of memory");
    return -1;
  }
  g->ssl = x;
  x->g = g;
  x->vfd = -1;
  for (int s = 0; s < S_COUNT; s++)
    x->fd[s] = -1;
  uint32_t max = g->ctl->def.max_robots;
  x->rx = malloc(SSL_DGRAM_MAX);
  x->team = calloc(max, 1);
  x->sid = calloc(max, 1);
  x->rob = calloc(max, sizeof *x->rob);
  x->blue = calloc(max, sizeof *x->blue);
  x->yellow = calloc(max, sizeof *x->yellow);
  x->pend = calloc(SSL_PEND_MAX, sizeof *x->pend);
  if (!x->rx || !x->team || !x->sid || !x->rob || !x->blue || !x->yellow ||
      !x->pend || pa_ssl_field_get((char)t->ssl, &x->f) != 0) {
    snprintf(err, err_sz, "out of memory");
    return -1;
  }
  for (int i = 0; i < SSL_PEND_MAX; i++)
    x->pend[i].x = x;
  pa_ssl_vision_geometry(x);
  const pa_netgw_def *d = &g->def;
  /* UDP carries no token: with --token the ports are loopback only. */
  const char *addr = g->token[0] ? "127.0.0.1"
                     : d->bind   ? d->bind
                                 : "127.0.0.1";
  if (g->token[0])
    pa_info("ssl: --token is set and the SSL protocol cannot carry one: its "
            "ports listen on 127.0.0.1 only");
  for (int s = 0; s < S_COUNT; s++) {
    x->fd[s] =
        pa_core_open(g, &pa_fe_ssl, (unsigned)s, &x->port[s], err, err_sz);
    if (x->fd[s] < 0) {
      x->fd[s] = -1;
      return -1;
    }
    x->ev[s] =
        event_new(g->base, x->fd[s], EV_READ | EV_PERSIST, on_readable, x);
    if (!x->ev[s] || event_add(x->ev[s], NULL) != 0) {
      snprintf(err, err_sz, "event setup failed");
      return -1;
    }
  }
  x->vfd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (x->vfd < 0) {
    snprintf(err, err_sz, "vision socket: %s", strerror(errno));
    return -1;
  }
  x->vdest.sin_family = AF_INET;
  /* a vision_port set at run time is kept across a pa-netgw restart */
  unsigned vport =
      pa_core_dest_recall(g, "ssl", "ssl_vision", d->ssl_vision_port);
  x->vdest.sin_port = htons((uint16_t)vport);
  if (d->ssl_vision_multicast) {
    unsigned char ttl = 1, loop = 1;
    setsockopt(x->vfd, IPPROTO_IP, IP_MULTICAST_TTL, &ttl, sizeof ttl);
    setsockopt(x->vfd, IPPROTO_IP, IP_MULTICAST_LOOP, &loop, sizeof loop);
    inet_pton(AF_INET, "224.5.23.2", &x->vdest.sin_addr);
  } else {
    inet_pton(AF_INET, "127.0.0.1", &x->vdest.sin_addr);
  }
  x->vision_ev = event_new(g->base, -1, EV_PERSIST, pa_ssl_vision_on_timer, x);
  double period = 1.0 / d->ssl_vision_hz;
  struct timeval tv = {(time_t)period,
                       (suseconds_t)((period - floor(period)) * 1e6)};
  if (!x->vision_ev || event_add(x->vision_ev, &tv) != 0) {
    snprintf(err, err_sz, "event setup failed");
    return -1;
  }
  pa_info("ssl division %c: control udp %s:%u, blue %u, yellow %u, sync blue "
          "%u, sync yellow %u; vision %s:%u at %g Hz",
          x->f.division, addr, x->port[S_CONTROL], x->port[S_BLUE],
          x->port[S_YELLOW], x->port[S_SYNC_BLUE], x->port[S_SYNC_YELLOW],
          d->ssl_vision_multicast ? "224.5.23.2" : "127.0.0.1", vport,
          d->ssl_vision_hz);
  return 0;
}

void pa_ssl_gw_poll(pa_netgw *g) {
  pa_tick hdr; /* periodic: the header only (not every robot's state) */
  const pa_tick *t = pa_gw_latest_header(g, &hdr) ? &hdr : NULL;
  if (!t || !(t->ssl == 'A' || t->ssl == 'B'))
    return; /* the ports stay open without a field: pa-sim refuses by name */
  pa_ssl_gw *x = g->ssl;
  if (x) {
    if (t->ssl != (uint32_t)x->f.division &&
        pa_ssl_field_get((char)t->ssl, &x->f) == 0) {
      pa_ssl_vision_geometry(x);
      x->have_map = false;
      pa_info("ssl: the field is now division %c", x->f.division);
    }
    return;
  }
  if (g->ssl_refused == t->ssl)
    return; /* said once */
  char err[256];
  if (pa_ssl_gw_start(g, err, sizeof err) != 0) {
    pa_ssl_gw_stop(g);
    g->ssl_refused = t->ssl;
    pa_warn("ssl: the world has an SSL field but %s: no SSL ports", err);
  }
}

void pa_ssl_gw_stop(pa_netgw *g) {
  pa_ssl_gw *x = g->ssl;
  if (!x)
    return;
  for (int s = 0; s < S_COUNT; s++) {
    if (x->ev[s])
      event_free(x->ev[s]);
    if (x->fd[s] >= 0)
      close(x->fd[s]);
  }
  if (x->vision_ev)
    event_free(x->vision_ev);
  if (x->vfd >= 0)
    close(x->vfd);
  for (int i = 0; x->pend && i < SSL_PEND_MAX; i++)
    if (x->pend[i].used)
      pend_release(&x->pend[i]); /* closing: its sender gets no response */
  pa_ssl_delay_free(x);
  free(x->pend);
  free(x->rx);
  free(x->out);
  free(x->team);
  free(x->sid);
  free(x->rob);
  free(x->blue);
  free(x->yellow);
  free(x);
  g->ssl = NULL;
}

int pa_ssl_gw_ports(const pa_netgw *g, unsigned ports[6]) {
  const pa_ssl_gw *x = g->ssl;
  if (!x)
    return -1;
  ports[0] = x->port[S_CONTROL];
  ports[1] = x->port[S_BLUE];
  ports[2] = x->port[S_YELLOW];
  ports[3] = ntohs(x->vdest.sin_port);
  ports[4] = x->port[S_SYNC_BLUE];
  ports[5] = x->port[S_SYNC_YELLOW];
  return 0;
}

/* ---- the front-end row --------------------------------------------------*/

static json_t *ssl_call(pa_netgw *g, const char *op, json_t *args,
                        pa_status *st, char *err, size_t err_sz) {
  (void)args;
  if (strcmp(op, "info")) {
    *st = PA_ERR_INVALID_MESSAGE;
    snprintf(err, err_sz, "ssl: no service '%s'", op);
    return NULL;
  }
  pa_ssl_gw_poll(g);
  unsigned p[6];
  json_t *o = json_object();
  bool open = pa_ssl_gw_ports(g, p) == 0; /* closed: no field when started */
  json_object_set_new(o, "open", json_boolean(open));
  if (!open)
    return o;
  const pa_netgw_def *d = &g->def;
  json_object_set_new(o, "control_port", json_integer(p[0]));
  json_object_set_new(o, "blue_port", json_integer(p[1]));
  json_object_set_new(o, "yellow_port", json_integer(p[2]));
  json_object_set_new(o, "vision_port", json_integer(p[3]));
  json_object_set_new(o, "sync_blue_port", json_integer(p[4]));
  json_object_set_new(o, "sync_yellow_port", json_integer(p[5]));
  json_object_set_new(
      o, "vision_address",
      json_string(d->ssl_vision_multicast ? "224.5.23.2" : "127.0.0.1"));
  json_object_set_new(o, "vision_hz", json_real(d->ssl_vision_hz));
  return o;
}

static const pa_fe_listener ssl_listeners[] = {
    {"ssl_control", PA_PORT_UDP, "--ssl_control_port",
     offsetof(pa_netgw_def, ssl_control_port), false, false, 0},
    {"ssl_blue", PA_PORT_UDP, "--ssl_blue_port",
     offsetof(pa_netgw_def, ssl_blue_port), false, false, 0},
    {"ssl_yellow", PA_PORT_UDP, "--ssl_yellow_port",
     offsetof(pa_netgw_def, ssl_yellow_port), false, false, 0},
    {"ssl_sync_blue", PA_PORT_UDP, "--ssl_sync_blue_port",
     offsetof(pa_netgw_def, ssl_sync_blue_port), false, false, 0},
    {"ssl_sync_yellow", PA_PORT_UDP, "--ssl_sync_yellow_port",
     offsetof(pa_netgw_def, ssl_sync_yellow_port), false, false, 0},
};

/* Open when the world has an SSL field (at start, or when one appears:
 * poll). */
const pa_frontend pa_fe_ssl = {
    .name = "ssl",
    .flags = "ssl_control_port ssl_blue_port ssl_yellow_port "
             "ssl_sync_blue_port ssl_sync_yellow_port ssl_vision_port "
             "ssl_vision_hz ssl_vision_multicast",
    .listeners = ssl_listeners,
    .n_listeners = S_COUNT,
    .token = false,
    .start = pa_ssl_gw_start,
    .stop = pa_ssl_gw_stop,
    .poll = pa_ssl_gw_poll,
    .call = ssl_call,
};
