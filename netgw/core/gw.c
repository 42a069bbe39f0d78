/* gw.c - the gateway's lifecycle: settings, the listener, the wake-up
 * threads, health and signals. The parts: world.c (views of the instance),
 * simlink.c (the sim round trip), streams.c (UDP feedback), client.c (TCP
 * clients and line framing), text.c (text commands), json.c (JSON lines),
 * foxglove*.c (Foxglove WebSocket server, MCAP recordings).
 * Everything runs in one libevent loop; bridge.c threads only wake it. */
#define _GNU_SOURCE
#include "netgw_int.h"

#include "pa_util.h"

#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <netinet/tcp.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <event2/buffer.h>

#define HEALTH_PERIOD_US 250000

/* Time spent in one loop callback, for health. */
void pa_gw_account(pa_netgw *g, int64_t t0) {
  int64_t d = pa_now_ns() - t0;
  g->cb_ns_sum += d;
  g->cb_n++;
  if (d > g->cb_ns_max)
    g->cb_ns_max = d;
}

pa_netgw_def pa_netgw_def_default(void) {
  pa_netgw_def d = {
      .tcp_port = 9000,
      .bind = "127.0.0.1",
      .token = NULL,
      .feedback_hz = 100,
      .max_clients = 256,
      .camera_chunk = PA_CAM_CHUNK_DEFAULT,
      .request_timeout_ms = 2000,
      .max_output = 4u << 20,
      .odom_watch_us = 0, /* off: it helps the median, not p99, and costs CPU */
      .realtime = false,
      .idle_timeout_ms = 10000,
      .max_clients_per_peer = 32,
      .reserve_clients = 4,
      .http_port = 0, /* the process: --http_port 8080 */
      .web_dir = "",
      .upload_dir = "",
      .unix_socket = "",
      .beacon_port = PA_BEACON_PORT,
      .ssl_control_port = 10300,
      .ssl_blue_port = 10301,
      .ssl_yellow_port = 10302,
      .ssl_sync_blue_port = 10303,
      .ssl_sync_yellow_port = 10304,
      .ssl_vision_port = 10020,
      .ssl_vision_hz = 60,
      .foxglove_port = 8765, /* a taken port only warns (foxglove.c) */
      .foxglove_encoding = "json",
      .player_port = 6665, /* a taken port only warns (player.c) */
  };
  return d;
}

unsigned pa_netgw_port(const pa_netgw *g) { return g->port; }

unsigned pa_netgw_http_port(const pa_netgw *g) {
  return pa_core_port(g, "http");
}

/* ---- health, lifecycle
 * -------------------------------------------------------------------*/

static void publish_health(pa_netgw *g) {
  pa_health *h = &g->ctl->health[PA_PROC_NETGW];
  h->heartbeat_ns = pa_now_ns();
  h->loops = g->loops;
  h->clients = g->n_clients;
  pa_odom_tx *o = &g->odom;
  pthread_mutex_lock(&o->mu);
  h->frames_sent = g->tx.sent + o->tx.sent;
  h->bytes_sent = g->tx.bytes + o->tx.bytes;
  h->frames_dropped = g->tx.dropped + o->tx.dropped;
  h->counters[PA_NETGW_CTR_ODOM_FRAMES] = o->frames;
  if (o->age_n)
    h->phase_ms[1] = (double)o->age_sum / (double)o->age_n / 1e6;
  o->age_sum = 0;
  o->age_n = 0;
  pthread_mutex_unlock(&o->mu);
  h->counters[PA_NETGW_CTR_STEPS] = g->steps;
  h->counters[PA_NETGW_CTR_BUSY] = g->busy;
  h->counters[PA_NETGW_CTR_LATE] = g->late;
  h->counters[PA_NETGW_CTR_SCAN_FRAMES] = g->scan_frames;
  h->counters[PA_NETGW_CTR_CAM_FRAMES] = g->cam_frames;
  /* phase_ms: [0] mean callback cost, [1] mean odom age at send (tick
   * written -> datagrams handed to the kernel, on the state thread);
   * period_max_ns: longest callback, all over the last health period. */
  if (g->cb_n) {
    h->phase_ms[0] = (double)g->cb_ns_sum / (double)g->cb_n / 1e6;
    h->period_max_ns = g->cb_ns_max;
  }
  g->cb_ns_sum = g->cb_ns_max = 0;
  g->cb_n = 0;
}

static void on_health(evutil_socket_t fd, short what, void *arg) {
  (void)fd, (void)what;
  publish_health(arg);
  for (const pa_frontend *const *f = pa_frontends; *f; f++)
    if ((*f)->poll)
      (*f)->poll(arg);
}

static void on_stop(evutil_socket_t fd, short what, void *arg) {
  (void)what;
  pa_netgw *g = arg;
  uint64_t v;
  ssize_t r = read(fd, &v, sizeof v);
  (void)r;
  event_base_loopbreak(g->base);
}

static void on_signal(evutil_socket_t sig, short what, void *arg) {
  (void)what;
  pa_netgw *g = arg;
  pa_info("signal %d: stopping", (int)sig);
  event_base_loopbreak(g->base);
}

static bool is_loopback(const char *addr) {
  struct in_addr a;
  return inet_pton(AF_INET, addr, &a) == 1 && (ntohl(a.s_addr) >> 24) == 127;
}

/* The settings a gateway cannot run with, and the token. */
static int check_def(pa_netgw *g, const pa_netgw_def *d, char *err,
                     size_t err_sz) {
  if (d->token && strlen(d->token) >= sizeof g->token) {
    /* Cut short, it would match no token a client can send. */
    snprintf(err, err_sz, "--token: at most %zu bytes", sizeof g->token - 1);
    return -1;
  }
  if (d->token)
    snprintf(g->token, sizeof g->token, "%s", d->token);
  if (d->max_clients < 1 || d->camera_chunk < PA_CAM_CHUNK_MIN ||
      d->camera_chunk > PA_CAM_CHUNK_MAX || !(d->feedback_hz > 0) ||
      d->request_timeout_ms < 1 || d->max_output < 4096 ||
      d->odom_watch_us > PA_NETGW_ODOM_WATCH_MAX_US ||
      d->reserve_clients > 100000) {
    snprintf(err, err_sz, "invalid gateway settings");
    return -1;
  }
  struct in_addr a;
  const char *bind_addr = d->bind ? d->bind : "127.0.0.1";
  if (inet_pton(AF_INET, bind_addr, &a) != 1) {
    snprintf(err, err_sz, "--bind: '%s' is not an IPv4 address", bind_addr);
    return -1;
  }
  if (!is_loopback(bind_addr) && !g->token[0])
    pa_warn("listening on %s without --token: anyone who can reach this "
            "address can drive the robots",
            bind_addr);
  return 0;
}

/* Client slots, ring buffers and caches, the UDP socket. */
static int alloc_buffers(pa_netgw *g, char *err, size_t err_sz) {
  pa_stack *stack = g->st;
  uint32_t max_robots = g->ctl->def.max_robots;
  g->slots = g->def.max_clients + g->def.reserve_clients;
  g->clients = calloc(g->slots, sizeof *g->clients);
  g->gens = calloc(g->slots, sizeof *g->gens);
  g->scan_cache = calloc(max_robots, sizeof *g->scan_cache);
  g->state_cap = pa_ring_max_record(stack->state);
  g->scan_cap = pa_ring_max_record(stack->scan);
  g->cam_cap = pa_ring_max_record(stack->camera);
  g->odom.cap = g->state_cap;
  g->odom.buf = malloc(g->state_cap);
  g->odom.subs = calloc(g->slots, sizeof *g->odom.subs);
  g->latest_buf = malloc(g->state_cap);
  g->scan_buf = malloc(g->scan_cap);
  g->cam_buf = malloc(g->cam_cap);
  g->cam_out = calloc(max_robots, sizeof *g->cam_out);
  if (!g->clients || !g->gens || !g->scan_cache || !g->odom.buf ||
      !g->odom.subs || !g->latest_buf || !g->scan_buf || !g->cam_buf ||
      !g->cam_out) {
    snprintf(err, err_sz, "out of memory");
    return -1;
  }
  if (pa_udp_tx_open(&g->tx, err, err_sz) != 0)
    return -1;
  /* Odom goes out of the same socket (one source port for every frame). */
  g->odom.tx.fd = g->tx.fd;
  return 0;
}

/* The control port (text and JSON lines): the core binds it as every
 * listener, walking a taken port (up to PA_PORT_WALK_MAX; with
 * --no_port_walk, or when all are taken, "cannot listen": exit 78), and a
 * restarted pa-netgw gets the same port again (listen.c). */
static int listen_control(pa_netgw *g, char *err, size_t err_sz) {
  unsigned bound_port = 0;
  int lfd =
      pa_core_open(g, pa_core_frontend("text"), 0, &bound_port, err, err_sz);
  if (lfd < 0)
    return -1;
  g->lis =
      evconnlistener_new(g->base, pa_gw_on_accept, g,
                         LEV_OPT_CLOSE_ON_FREE | LEV_OPT_CLOSE_ON_EXEC, 0, lfd);
  if (!g->lis) {
    close(lfd);
    snprintf(err, err_sz, "evconnlistener_new failed");
    return -1;
  }
  evconnlistener_set_error_cb(g->lis, pa_gw_on_accept_error);
  g->port = bound_port;
  if (!g->def.unix_socket || !g->def.unix_socket[0])
    return 0;
  /* --unix_socket: the same clients, on a path (pa_gw_on_accept) */
  int ufd = pa_bind_unix(g->def.unix_socket, "--unix_socket", err, err_sz);
  if (ufd < 0)
    return -1;
  g->lis_unix =
      evconnlistener_new(g->base, pa_gw_on_accept, g,
                         LEV_OPT_CLOSE_ON_FREE | LEV_OPT_CLOSE_ON_EXEC, 0, ufd);
  if (!g->lis_unix) {
    close(ufd);
    unlink(g->def.unix_socket);
    snprintf(err, err_sz, "evconnlistener_new failed");
    return -1;
  }
  evconnlistener_set_error_cb(g->lis_unix, pa_gw_on_accept_error);
  pa_info("control protocol also on unix socket %s", g->def.unix_socket);
  return 0;
}

/* Cursors and reader slots of the rings, the replies a previous pa-netgw
 * left, and the threads that wake the loop. */
static int attach_rings(pa_netgw *g, char *err, size_t err_sz) {
  pa_stack *stack = g->st;
  /* A restarted netgw owns the demand: nobody subscribes until clients do. */
  for (uint32_t r = 0; r < g->ctl->def.max_robots; r++)
    __atomic_store_n(&stack->cam[r].subscribers, 0, __ATOMIC_RELEASE);
  sem_post(&g->ctl->render_wake);
  /* The scan cache fills from what the ring still holds at its first drain
   * (get_state, a subscription or step_batch asks for it first): not here,
   * so an idle gateway maps none of the ring's pages and caches nothing. */
  uint64_t head = pa_ring_head(stack->scan);
  uint64_t slots = pa_ring_slot_count(stack->scan);
  g->scan_cur.next = head > slots ? head - slots + 1 : 1;
  g->scan_cur.missed = 0;
  g->odom.cur = pa_ring_cursor_now(stack->state);
  g->cam_cur = pa_ring_cursor_now(stack->camera);
  g->state_reader = pa_ring_reader_register(stack->state);
  g->scan_reader = pa_ring_reader_register(stack->scan);
  g->cam_reader = pa_ring_reader_register(stack->camera);
  if (g->state_reader < 0 || g->scan_reader < 0 || g->cam_reader < 0) {
    snprintf(err, err_sz,
             "no free reader slot in the state, scan or camera "
             "ring (another pa-netgw running?)");
    return -1;
  }
  /* Replies that a previous netgw left unread are for clients gone now. */
  while (pa_queue_peek(stack->reply, NULL) >= 0)
    pa_queue_pop(stack->reply);
  atomic_init(&g->odom_active, false);
  atomic_init(&g->scan_active, false);
  pa_bridge_set_active_flag(&g->br_state, &g->odom_active);
  pa_bridge_set_active_flag(&g->br_scan, &g->scan_active);
  if (pa_bridge_start_direct(&g->br_state, stack->state, g->state_reader,
                             pa_gw_odom_send, g, err, err_sz) != 0 ||
      pa_bridge_start(&g->br_scan, g->base, stack->scan, g->scan_reader, NULL,
                      pa_gw_on_scan, g, err, err_sz) != 0 ||
      pa_bridge_start(&g->br_cam, g->base, stack->camera, g->cam_reader, NULL,
                      pa_gw_on_camera, g, err, err_sz) != 0 ||
      pa_bridge_start(&g->br_reply, g->base, NULL, -1,
                      pa_queue_sem(stack->reply), pa_gw_on_reply, g, err,
                      err_sz) != 0)
    return -1;
  if (g->def.realtime) {
    /* Only the odom thread: its wake-up is the frame age; best effort. */
    struct sched_param sp = {.sched_priority = PA_NETGW_RT_PRIO};
    int rc = pthread_setschedparam(g->br_state.thread, SCHED_FIFO, &sp);
    if (rc != 0)
      pa_warn("--realtime: SCHED_FIFO refused for the odom thread (%s); "
              "continuing at normal priority",
              strerror(rc));
  }
  return 0;
}

/* The loop's own events: stop, health, relisten, the camera's next turn. */
static int make_events(pa_netgw *g, char *err, size_t err_sz) {
  g->stop_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  g->stop_ev = g->stop_fd >= 0 ? event_new(g->base, g->stop_fd,
                                           EV_READ | EV_PERSIST, on_stop, g)
                               : NULL;
  g->health_ev = event_new(g->base, -1, EV_PERSIST, on_health, g);
  g->relisten_ev = evtimer_new(g->base, pa_gw_on_relisten, g);
  g->cam_more_ev = evtimer_new(g->base, pa_gw_on_camera_more, g);
  if (!g->stop_ev || !g->health_ev || !g->relisten_ev || !g->cam_more_ev ||
      pa_lim_init(g) != 0 || pa_core_ask_init(g) != 0) {
    snprintf(err, err_sz, "event setup failed");
    return -1;
  }
  event_add(g->stop_ev, NULL);
  return 0;
}

pa_netgw *pa_netgw_create(const pa_netgw_def *d, pa_stack *stack, char *err,
                          size_t err_sz) {
  pa_netgw *g = calloc(1, sizeof *g);
  if (!g) {
    snprintf(err, err_sz, "out of memory");
    return NULL;
  }
  g->def = *d;
  g->step_tick_ns = 2000; /* a few robots' tick, until STEPs measure it */
  g->st = stack;
  g->ctl = stack->ctl;
  g->stop_fd = -1;
  g->beacon_fd = -1;
  g->tx.fd = -1;
  g->odom.tx.fd = -1;
  if (pthread_mutex_init(&g->odom.mu, NULL) != 0) {
    free(g);
    snprintf(err, err_sz, "pthread_mutex_init failed");
    return NULL;
  }
  g->odom.mu_init = true;
  g->splice_nonce = pa_shm_new_boot_id();
  /* Request ids keep growing across netgw restarts, so a reply to a previous
   * netgw's command can never match a request of this one. */
  g->next_req = (uint64_t)pa_now_ns();
  g->state_reader = g->scan_reader = g->cam_reader = -1;
  pa_core_keep_init(g);
  if (check_def(g, d, err, err_sz) != 0 || alloc_buffers(g, err, err_sz) != 0)
    goto fail;
  g->base = event_base_new();
  if (!g->base) {
    snprintf(err, err_sz, "event_base_new failed");
    goto fail;
  }
  if (listen_control(g, err, err_sz) != 0 ||
      attach_rings(g, err, err_sz) != 0 || make_events(g, err, err_sz) != 0)
    goto fail;
  /* Every front-end, in table order; each opens its listeners through
   * the core (pa_core_open). */
  for (const pa_frontend *const *f = pa_frontends; *f; f++)
    if ((*f)->start && (*f)->start(g, err, err_sz) != 0)
      goto fail;
  struct timeval hp = {0, HEALTH_PERIOD_US};
  event_add(g->health_ev, &hp);
  g->ctl->health[PA_PROC_NETGW].pid = getpid();
  g->ctl->health[PA_PROC_NETGW].start_ns = pa_now_ns();
  __atomic_store_n(&g->ctl->http_port, pa_core_port(g, "http"),
                   __ATOMIC_RELEASE);
  __atomic_store_n(&g->ctl->foxglove_port, pa_core_port(g, "foxglove"),
                   __ATOMIC_RELEASE);
  __atomic_store_n(&g->ctl->tcp_port, g->port, __ATOMIC_RELEASE);
  return g;
fail:
  pa_netgw_destroy(g);
  return NULL;
}

int pa_netgw_run(pa_netgw *g, bool handle_signals) {
  if (handle_signals) {
    g->sig_int = evsignal_new(g->base, SIGINT, on_signal, g);
    g->sig_term = evsignal_new(g->base, SIGTERM, on_signal, g);
    if (g->sig_int)
      evsignal_add(g->sig_int, NULL);
    if (g->sig_term)
      evsignal_add(g->sig_term, NULL);
  }
  publish_health(g);
  __atomic_store_n(&g->ctl->health[PA_PROC_NETGW].ready, 1, __ATOMIC_RELEASE);
  int rc = 0;
  for (;;) {
    /* Right after a lockstep reply the loop polls until watch_until (the
     * client's next STEP is due), yielding the core as it goes; else it
     * blocks until an event. */
    bool watch = g->watch_until && pa_now_ns() < g->watch_until;
    if (!watch)
      g->watch_until = 0;
    rc = event_base_loop(g->base, watch ? EVLOOP_NONBLOCK : EVLOOP_ONCE);
    if (rc < 0 || event_base_got_break(g->base) || event_base_got_exit(g->base))
      break;
    if (rc == 1 && !watch) /* no events left at all */
      break;
    if (watch)
      sched_yield();
  }
  __atomic_store_n(&g->ctl->health[PA_PROC_NETGW].ready, 0, __ATOMIC_RELEASE);
  return rc < 0 ? -1 : 0;
}

void pa_netgw_stop(pa_netgw *g) {
  uint64_t one = 1;
  ssize_t w = write(g->stop_fd, &one, sizeof one);
  (void)w;
}

void pa_netgw_destroy(pa_netgw *g) {
  if (!g)
    return;
  pa_bridge_stop(&g->br_state);
  pa_bridge_stop(&g->br_scan);
  pa_bridge_stop(&g->br_cam);
  pa_bridge_stop(&g->br_reply);
  pa_gw_say_terminating(g);
  /* Front-ends stop in reverse order (Foxglove finishes a recording). */
  size_t nfe = 0;
  while (pa_frontends[nfe])
    nfe++;
  while (nfe--)
    if (pa_frontends[nfe]->stop)
      pa_frontends[nfe]->stop(g);
  if (g->clients)
    for (uint32_t i = 0; i < g->slots; i++)
      if (g->clients[i])
        pa_gw_client_free(g->clients[i]);
  struct {
    pa_ring *ring;
    int reader;
  } readers[] = {{g->st ? g->st->state : NULL, g->state_reader},
                 {g->st ? g->st->scan : NULL, g->scan_reader},
                 {g->st ? g->st->camera : NULL, g->cam_reader}};
  for (size_t i = 0; i < sizeof readers / sizeof readers[0]; i++)
    if (readers[i].reader >= 0)
      pa_ring_reader_unregister(readers[i].ring, readers[i].reader);
  if (g->ctl && g->port && g->ctl->health[PA_PROC_NETGW].pid == getpid()) {
    publish_health(g);
    g->ctl->health[PA_PROC_NETGW].ready = 0;
    /* A clean exit clears the pid (as pa-sim and pa-render do): the
     * launcher tells a crash inside a --wrap wrapper by a pid left here. */
    g->ctl->health[PA_PROC_NETGW].pid = 0;
    __atomic_store_n(&g->ctl->tcp_port, 0, __ATOMIC_RELEASE);
    __atomic_store_n(&g->ctl->http_port, 0, __ATOMIC_RELEASE);
    __atomic_store_n(&g->ctl->foxglove_port, 0, __ATOMIC_RELEASE);
    pa_core_ports_down(g);
  }
  struct event *evs[] = {g->sig_int,   g->sig_term,    g->stop_ev,
                         g->health_ev, g->relisten_ev, g->cam_more_ev};
  for (size_t i = 0; i < sizeof evs / sizeof evs[0]; i++)
    if (evs[i])
      event_free(evs[i]);
  pa_lim_free(g);
  pa_core_ask_free(g);
  if (g->lis)
    evconnlistener_free(g->lis);
  if (g->lis_unix) {
    evconnlistener_free(g->lis_unix);
    unlink(g->def.unix_socket);
  }
  if (g->base)
    event_base_free(g->base);
  pa_core_keep_free(g);
  if (g->stop_fd >= 0)
    close(g->stop_fd);
  pa_udp_tx_close(&g->tx);
  if (g->map)
    pa_shm_detach(&g->map_seg);
  if (g->scan_cache)
    for (uint32_t r = 0; r < g->ctl->def.max_robots; r++)
      free(g->scan_cache[r]);
  free(g->scan_cache);
  free(g->clients);
  free(g->gens);
  free(g->odom.buf);
  free(g->odom.subs);
  if (g->odom.mu_init)
    pthread_mutex_destroy(&g->odom.mu);
  free(g->latest_buf);
  free(g->scan_buf);
  free(g->cam_buf);
  if (g->cam_out)
    for (uint32_t r = 0; r < g->ctl->def.max_robots; r++) {
      free(g->cam_out[r].cur);
      free(g->cam_out[r].next);
    }
  free(g->cam_out);
  free(g);
}
