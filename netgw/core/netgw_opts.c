/* netgw_opts.c - pa-netgw's flag table (one row per flag) and its
 * cross-flag checks; read by pa-netgw's main, the launcher and the docs
 * test. No libevent here: the launcher links this file alone. */
#include "netgw.h"

#include <stdio.h>
#include <string.h>

#define ROW(FIELD, NAME, TYPE, MIN, MAX, DEF, HELP)                            \
  PA_OPT_ROW(pa_netgw_args, FIELD, NAME, TYPE, MIN, MAX, DEF, NULL, HELP)
#define STR(FIELD, NAME, DEF, HELP)                                            \
  PA_OPT_ROW(pa_netgw_args, FIELD, NAME, PA_OPT_STR, 0, -1, 0, DEF, HELP)

static const pa_opt_row rows[] = {
    {STR(instance, "instance", "p9000", "shared-memory instance")},
    {ROW(def.tcp_port, "tcp_port", PA_OPT_U32, 0, 65535, 9000,
         "TCP port (0 = pick a free one)")},
    {STR(def.bind, "bind", "127.0.0.1", "IPv4 address to listen on")},
    {STR(def.token, "token", NULL,
         "secret a client must send with `auth` first (none = no auth)")},
    {ROW(def.feedback_hz, "tcp_feedback_hz", PA_OPT_DOUBLE, 0.001, 100000, 100,
         "odom frames per simulated second")},
    {ROW(def.max_clients, "max_clients", PA_OPT_U32, 1, 100000, 256,
         "TCP clients served at once")},
    {ROW(def.idle_timeout_ms, "idle_timeout_ms", PA_OPT_U32, 0, 3600000, 10000,
         "[ms] close a connection whose line stays unfinished, or (with "
         "--token) that does not authenticate, this long (0 = never)")},
    {ROW(def.max_clients_per_peer, "max_clients_per_peer", PA_OPT_U32, 0,
         100000, 32,
         "connections from one IPv4 address, loopback too: TCP clients, and "
         "HTTP, /ws and Foxglove connections each (0 = no limit)")},
    {ROW(def.reserve_clients, "reserve_clients", PA_OPT_U32, 0, 1000, 4,
         "slots beyond --max_clients for an address holding no connection "
         "(an admin connects from e.g. 127.0.0.2)")},
    {ROW(def.camera_chunk, "camera_chunk", PA_OPT_U32, PA_CAM_CHUNK_MIN,
         PA_CAM_CHUNK_MAX, PA_CAM_CHUNK_DEFAULT,
         "[bytes] camera payload per datagram (1400 fits a 1500-byte MTU)")},
    {ROW(def.request_timeout_ms, "request_timeout_ms", PA_OPT_U32, 1, 3600000,
         2000, "[ms] simulator round trip before a request gets busy")},
    {ROW(def.max_output, "max_output", PA_OPT_U64, 65536, 1l << 30, 4l << 20,
         "[bytes] unread replies before a client is disconnected")},
    {ROW(odom_watch_us, "odom_watch_us", PA_OPT_INT, -1,
         PA_NETGW_ODOM_WATCH_MAX_US, -1,
         "[us] wake this early for a due odom tick and watch for it (lower "
         "median frame age for ~that much CPU per frame period; 0 = off; "
         "-1 = 0, or 300 with --realtime)")},
    {ROW(def.realtime, "realtime", PA_OPT_FLAG, 0, -1, 0,
         "pa-netgw: odom thread SCHED_FIFO priority 9 (below pa-sim's 10), "
         "mlockall, --odom_watch_us 300 (needs CAP_SYS_NICE; best effort)")},
    {ROW(def.http_port, "http_port", PA_OPT_I32, -1, 65535, 8080,
         "HTTP port of the web viewer, map editor, /metrics and /ws (0 = none, "
         "-1 = pick a free one; with --tcp_port 0 and no --http_port: -1; a "
         "taken one walks to the next free one)")},
    {STR(def.web_dir, "web_dir", "",
         "directory of the web pages ('' = the source tree's web/ or "
         "<bin>/../share/playarea/web)")},
    {STR(def.unix_socket, "unix_socket", "",
         "also serve the control protocol on this Unix-domain socket path "
         "(same host, mode 0600; '' = off): NavEnv(shm=True) steps over it")},
    {STR(def.upload_dir, "upload_dir", "",
         "the editor's \"Run it\" writes maps and worlds here (under pa-sim's "
         "--data_dir; '' = off)")},
    {ROW(def.no_port_walk, "no_port_walk", PA_OPT_FLAG, 0, -1, 0,
         "a taken --tcp_port (or given --http_port) is a configuration error "
         "(exit 78) instead of trying the next ports (up to 64 in all)")},
    {ROW(def.beacon_port, "beacon_port", PA_OPT_U32, 1, 65535, PA_BEACON_PORT,
         "UDP port the discovery beacon goes to (once a second; to "
         "127.0.0.1, or the LAN broadcast address with a non-loopback "
         "--bind)")},
    {ROW(def.no_beacon, "no_beacon", PA_OPT_FLAG, 0, -1, 0,
         "send no discovery beacon (`playarea discover` will not list this "
         "stack)")},
    {ROW(def.ssl_control_port, "ssl_control_port", PA_OPT_U32, 0, 65535, 10300,
         "SSL worlds: UDP port of SimulatorCommand (0 = pick a free one; "
         "picked too with --tcp_port 0)")},
    {ROW(def.ssl_blue_port, "ssl_blue_port", PA_OPT_U32, 0, 65535, 10301,
         "SSL worlds: UDP port of the blue team's RobotControl (0 = pick)")},
    {ROW(def.ssl_yellow_port, "ssl_yellow_port", PA_OPT_U32, 0, 65535, 10302,
         "SSL worlds: UDP port of the yellow team's RobotControl (0 = pick)")},
    {ROW(def.ssl_sync_blue_port, "ssl_sync_blue_port", PA_OPT_U32, 0, 65535,
         10303,
         "SSL worlds: UDP port of the blue team's SimulationSyncRequest "
         "(commands, a step, the vision of it; 0 = pick)")},
    {ROW(def.ssl_sync_yellow_port, "ssl_sync_yellow_port", PA_OPT_U32, 0, 65535,
         10304,
         "SSL worlds: UDP port of the yellow team's SimulationSyncRequest "
         "(0 = pick)")},
    {ROW(def.ssl_vision_port, "ssl_vision_port", PA_OPT_U32, 1, 65535, 10020,
         "SSL worlds: SSL_WrapperPacket vision to 127.0.0.1 at this port")},
    {ROW(def.ssl_vision_hz, "ssl_vision_hz", PA_OPT_DOUBLE, 0.1, 10000, 60,
         "SSL worlds: [Hz] vision frames (wall clock)")},
    {ROW(def.ssl_vision_multicast, "ssl_vision_multicast", PA_OPT_FLAG, 0, -1,
         0, "SSL worlds: send vision to 224.5.23.2 (multicast) instead")},
    {ROW(def.foxglove_port, "foxglove_port", PA_OPT_I32, -1, 65535, 8765,
         "Foxglove WebSocket port (0 = off, -1 = a free one; a taken port "
         "walks to the next free one; none free: warns, runs without it)")},
    {STR(def.foxglove_encoding, "foxglove_encoding", "json",
         "Foxglove scans, camera images and /scene: json or protobuf "
         "(binary, the foxglove schemas; ranges carry +inf for no return)")},
    {ROW(def.player_port, "player_port", PA_OPT_I32, -1, 65535, 6665,
         "Player 3 protocol TCP port for libplayerc clients (0 = off, -1 = a "
         "free one; a taken port walks to the next free one; none free: "
         "warns, runs without it)")},
    {STR(def.allow_origin, "allow_origin", NULL,
         "browser origins (comma-separated, e.g. https://app.example:8443; "
         "* = any) that may use /ws, uploads and state-changing HTTP "
         "requests besides the page's own")},
    {STR(def.data_dir, "data_dir", NULL,
         "pa-netgw: record_mcap and --record write only under this directory "
         "(unset = pa-netgw's working directory)")},
    {STR(def.record, "record", NULL,
         "record an MCAP file (relative to --data_dir) from the start, "
         "stopped by stop_record_mcap or shutdown")},
};

static int finish(void *args, const bool *given, char *err, size_t err_sz) {
  pa_netgw_args *a = args;
  if (!a->def.bind || !*a->def.bind) {
    snprintf(err, err_sz, "--bind: empty address");
    return -1;
  }
  const char *fe = a->def.foxglove_encoding;
  if (fe && strcmp(fe, "json") && strcmp(fe, "protobuf")) {
    snprintf(err, err_sz, "--foxglove_encoding: '%s' is not json or protobuf",
             fe);
    return -1;
  }
  if (!a->instance || !*a->instance) {
    snprintf(err, err_sz, "--instance: empty name");
    return -1;
  }
  /* An explicit HTTP port must bind; the default one only warns (a second
   * stack on this machine). A stack on a picked TCP port (--tcp_port 0: a
   * test, or one of many instances) picks every port it listens on that was
   * not given, so it never takes a well-known port from a user's stack. */
  for (size_t k = 0; k < sizeof rows / sizeof rows[0]; k++) {
    const char *n = rows[k].o.name;
    if (!strcmp(n, "http_port"))
      a->def.http_required = given[k];
    if (given[k] || a->def.tcp_port != 0)
      continue;
    if (!strcmp(n, "http_port"))
      a->def.http_port = -1;
    else if (!strcmp(n, "foxglove_port"))
      a->def.foxglove_port = -1;
    else if (!strcmp(n, "player_port"))
      a->def.player_port = -1;
    else if (!strcmp(n, "ssl_control_port"))
      a->def.ssl_control_port = 0;
    else if (!strcmp(n, "ssl_blue_port"))
      a->def.ssl_blue_port = 0;
    else if (!strcmp(n, "ssl_yellow_port"))
      a->def.ssl_yellow_port = 0;
    else if (!strcmp(n, "ssl_sync_blue_port"))
      a->def.ssl_sync_blue_port = 0;
    else if (!strcmp(n, "ssl_sync_yellow_port"))
      a->def.ssl_sync_yellow_port = 0;
  }
  /* SCHED_FIFO alone does not cut p99: realtime also watches. */
  long watch = a->odom_watch_us;
  if (watch < 0)
    watch = a->def.realtime ? (long)PA_NETGW_RT_WATCH_US : 0;
  a->def.odom_watch_us = (unsigned)watch;
  return 0;
}

static const pa_opt_table table = PA_OPT_TABLE(
    "pa-netgw",
    "TCP control (text and JSON lines) and UDP feedback frames for "
    "a playarea instance.",
    rows, pa_netgw_args, finish);

const pa_opt_table *pa_netgw_opts(void) { return &table; }
