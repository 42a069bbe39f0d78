/* test_launch_cli.c - the launcher's flag table and command line, without
 * starting a stack: routing of flags to processes, --wrap splitting, backoff,
 * and the real `playarea` binary refusing bad flags (exit 78, the message
 * names the flag, nothing created). */
#include "pa_launch.h"
#include "test_launch_util.h"
#include "testutil.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

/* 260 characters: more than pa_sim_def.dataset_dir holds. */
#define LONG_DIR                                                               \
  "/tmp/aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa" \
  "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa" \
  "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa" \
  "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"

static bool argv_has(char **av, const char *s) {
  for (size_t i = 0; av[i]; i++)
    if (!strcmp(av[i], s))
      return true;
  return false;
}

static size_t argv_len(char **av) {
  size_t n = 0;
  while (av[n])
    n++;
  return n;
}

/* The three children's command lines for one parsed playarea line. */
typedef struct children {
  char **sim, **ren, **net;
} children;

/* Parses argv (NULL-terminated) into c and builds the children's command
 * lines under /b; fails the test if any of it fails. */
static children parse_children(pa_launch_cfg *c, char **argv) {
  char err[256];
  assert_int_equal(
      pa_launch_cfg_parse(c, (int)argv_len(argv), argv, err, sizeof err), 0);
  children k = {pa_launch_child_argv(c, PA_PROC_SIM, "/b", err, sizeof err),
                pa_launch_child_argv(c, PA_PROC_RENDER, "/b", err, sizeof err),
                pa_launch_child_argv(c, PA_PROC_NETGW, "/b", err, sizeof err)};
  assert_non_null(k.sim);
  assert_non_null(k.ren);
  assert_non_null(k.net);
  return k;
}

static void children_free(children *k) {
  pa_launch_argv_free(k->sim);
  pa_launch_argv_free(k->ren);
  pa_launch_argv_free(k->net);
}

static void test_routing(void **state) {
  (void)state;
  pa_launch_cfg c = pa_launch_cfg_default();
  char *argv[] = {"playarea",
                  "--scan_hz",
                  "5",
                  "--camera_hz=7.5",
                  "--tcp-feedback-hz",
                  "50",
                  "--paused",
                  "--tcp_port",
                  "0",
                  "--camera_width",
                  "320",
                  "--wrap",
                  "netgw=strace -f -o '/tmp/a b'",
                  "--instance",
                  "xy",
                  NULL};
  children k = parse_children(&c, argv);
  char **sim = k.sim, **ren = k.ren, **net = k.net;
  assert_string_equal(c.instance, "xy");
  /* each flag goes only where it is needed; given flags only */
  assert_string_equal(sim[0], "/b/pa-sim");
  assert_true(argv_has(sim, "--instance=xy"));
  assert_true(argv_has(sim, "--scan_hz=5"));
  assert_true(argv_has(sim, "--paused=1"));
  assert_true(argv_has(sim, "--camera_width=320"));
  assert_false(argv_has(sim, "--camera_hz=7.5"));
  assert_int_equal(argv_len(sim), 5);
  assert_string_equal(ren[0], "/b/pa-render");
  assert_true(argv_has(ren, "--camera_hz=7.5"));
  assert_int_equal(argv_len(ren), 3);
  /* the wrap command comes first, quotes honoured, then the program */
  assert_string_equal(net[0], "strace");
  assert_string_equal(net[1], "-f");
  assert_string_equal(net[2], "-o");
  assert_string_equal(net[3], "/tmp/a b");
  assert_string_equal(net[4], "/b/pa-netgw");
  assert_true(argv_has(net, "--tcp_feedback_hz=50"));
  assert_true(argv_has(net, "--tcp_port=0"));
  assert_true(argv_has(net, "--instance=xy"));
  assert_int_equal(argv_len(net), 8);
  children_free(&k);

  pa_stack_def d = pa_launch_stack_def(&c);
  assert_int_equal(d.max_robots, 256);
  assert_true(d.max_cam_width >= 320);
}

/* A flag several processes take goes to each; one given at its default is
 * still passed (it wins over a world file); values read back exactly. */
static void test_shared_and_exact(void **state) {
  (void)state;
  pa_launch_cfg c = pa_launch_cfg_default();
  char *argv[] = {"playarea",
                  "--realtime",
                  "--camera_fov_deg",
                  "75.5",
                  "--laser_beams=360",
                  "--max_output",
                  "65536",
                  "--seed",
                  "9000000000000000000",
                  NULL};
  children k = parse_children(&c, argv);
  char **sim = k.sim, **ren = k.ren, **net = k.net;
  assert_true(argv_has(sim, "--realtime=1"));
  assert_true(argv_has(net, "--realtime=1"));
  assert_false(argv_has(ren, "--realtime=1"));
  assert_true(argv_has(sim, "--camera_fov_deg=75.5"));
  assert_true(argv_has(sim, "--laser_beams=360"));
  assert_true(argv_has(sim, "--seed=9000000000000000000"));
  assert_true(argv_has(net, "--max_output=65536"));
  /* the process's derived fields: forced laser/camera, watch under RT */
  assert_true(c.sim.def.force & PA_SIM_FORCE_LASER_BEAMS);
  assert_true(c.sim.def.force & PA_SIM_FORCE_CAMERA_FOV);
  assert_false(c.sim.def.force & PA_SIM_FORCE_LASER_NOISE);
  assert_int_equal(c.netgw.def.odom_watch_us, PA_NETGW_RT_WATCH_US);
  children_free(&k);

  char err[256];
  /* Setting a flag later (the supervisor pinning a picked port). */
  assert_int_equal(pa_launch_cfg_set(&c, "tcp_port", "9321", err, sizeof err),
                   0);
  assert_int_equal(c.tcp_port, 9321);
  net = pa_launch_child_argv(&c, PA_PROC_NETGW, "/b", err, sizeof err);
  assert_non_null(net);
  assert_true(argv_has(net, "--tcp_port=9321"));
  pa_launch_argv_free(net);
  /* ... or rewriting the plain copy, as supervisor.c does */
  c.tcp_port = 9400;
  net = pa_launch_child_argv(&c, PA_PROC_NETGW, "/b", err, sizeof err);
  assert_true(argv_has(net, "--tcp_port=9400"));
  pa_launch_argv_free(net);
  assert_int_equal(pa_launch_cfg_set(&c, "tcp_port", "70000", err, sizeof err),
                   -1);
  assert_non_null(strstr(err, "--tcp_port: 70000 is out of range"));
  assert_int_equal(pa_launch_cfg_set(&c, "tcp_prot", "1", err, sizeof err), -1);
  assert_non_null(strstr(err, "unknown flag --tcp_prot"));
}

static void test_default_instance(void **state) {
  (void)state;
  pa_launch_cfg c = pa_launch_cfg_default();
  char *a1[] = {"playarea", "--tcp_port", "9123", NULL};
  char err[256];
  assert_int_equal(pa_launch_cfg_parse(&c, 3, a1, err, sizeof err), 0);
  assert_string_equal(c.instance, "p9123");
  pa_launch_cfg d = pa_launch_cfg_default();
  char *a2[] = {"playarea", "--tcp_port=0", NULL};
  assert_int_equal(pa_launch_cfg_parse(&d, 2, a2, err, sizeof err), 0);
  assert_int_equal(d.instance[0], 'a'); /* a<pid> */
  assert_int_equal(atoi(d.instance + 1), (int)getpid());
}

static void test_split(void **state) {
  (void)state;
  char buf[256], *w[8], err[128];
  int n = pa_launch_split("  valgrind --tool=none\t\"a b\" c\\ d 'e\"f' ", w, 8,
                          buf, sizeof buf, err, sizeof err);
  assert_int_equal(n, 5);
  assert_string_equal(w[0], "valgrind");
  assert_string_equal(w[1], "--tool=none");
  assert_string_equal(w[2], "a b");
  assert_string_equal(w[3], "c d");
  assert_string_equal(w[4], "e\"f");
  assert_int_equal(
      pa_launch_split("a 'b", w, 8, buf, sizeof buf, err, sizeof err), -1);
  assert_non_null(strstr(err, "unterminated"));
  assert_int_equal(
      pa_launch_split("a b c", w, 2, buf, sizeof buf, err, sizeof err), -1);
  assert_int_equal(
      pa_launch_split("   ", w, 8, buf, sizeof buf, err, sizeof err), 0);
}

static void test_backoff(void **state) {
  (void)state;
  assert_int_equal(pa_launch_backoff_ms(1), 10);
  assert_int_equal(pa_launch_backoff_ms(2), 20);
  assert_int_equal(pa_launch_backoff_ms(4), 80);
  assert_int_equal(pa_launch_backoff_ms(30), PA_LAUNCH_BACKOFF_MAX_MS);
}

static void test_proc_names(void **state) {
  (void)state;
  assert_int_equal(pa_launch_proc_from_name("sim"), PA_PROC_SIM);
  assert_int_equal(pa_launch_proc_from_name("pa-netgw"), PA_PROC_NETGW);
  assert_int_equal(pa_launch_proc_from_name("render"), PA_PROC_RENDER);
  assert_int_equal(pa_launch_proc_from_name("launch"), -1);
  assert_int_equal(pa_launch_proc_from_name("gpu"), -1);
}

/* Runs the real binary with bad flags: exit 78, the message names what was
 * wrong, and no segment of the instance exists afterwards. */
static void expect_refused(const char *const *args, const char *needle) {
  char inst[PA_SHM_INSTANCE_MAX], log[512];
  pa_test_instance(inst, sizeof inst, "bad");
  snprintf(log, sizeof log, "%s/bad-%s.log", pa_test_tmpdir(), inst);
  const char *argv[24];
  int k = 0;
  argv[k++] = "--instance";
  argv[k++] = inst;
  for (int i = 0; args[i]; i++)
    argv[k++] = args[i];
  argv[k] = NULL;
  int rc = lt_run_playarea(argv, log, 20000);
  char text[4096];
  pa_test_read_file(log, text, sizeof text);
  if (rc != PA_EXIT_CONFIG || !strstr(text, needle))
    fprintf(stderr, "args %s ...: rc %d, output:\n%s\n", args[0], rc, text);
  assert_int_equal(rc, PA_EXIT_CONFIG);
  assert_non_null(strstr(text, needle));
  assert_null(strstr(text, "starting")); /* nothing was started */
  assert_int_equal(pa_test_shm_count(inst), 0);
}

static void test_bad_flags(void **state) {
  (void)state;
  static const struct {
    const char *args[5]; /* ends at the first NULL */
    const char *needle;
  } cases[] = {
      {{"--tcp_prot", "5"}, "unknown flag --tcp_prot"},
      {{"--tcp_port", "70000"}, "--tcp_port: 70000 is out of range"},
      {{"--control_hz", "fast"}, "--control_hz: 'fast' is not a finite number"},
      {{"--map_yaml", "/nonexistent/map.yaml"},
       "--map_yaml: cannot read '/nonexistent/map.yaml'"},
      {{"--world", "/nonexistent/world.yaml"}, "--world: cannot read"},
      {{"--wrap", "gpu=perf record"}, "--wrap: unknown process 'gpu'"},
      {{"--wrap", "sim="}, "--wrap sim: empty command"},
      {{"--robots", "9", "--max_robots", "4"},
       "--robots: 9 is more than --max_robots 4"},
      {{"--laser_range_min", "5", "--laser_range_max", "2"},
       "--laser_range_min"},
      {{"--no-render", "--viewer"}, "--viewer needs pa-render"},
      {{"--speed", "-1"}, "--speed"},
      {{"--tcp_port"}, "--tcp_port needs a value"},
      {{"extra"}, "unexpected argument 'extra'"},
      {{"--wrap", "render='valgrind"}, "--wrap render: unterminated"},
      /* Refused by the owning process's own row or check, so playarea must
       * refuse them before starting anything (they used to drift). */
      {{"--robots", "0"}, "--robots: 0 is out of range [1, 100000]"},
      {{"--laser_range_max", "5000"},
       "--laser_range_max: 5000 is out of range [0.01, 1000]"},
      {{"--viewer", "--viewer_width", "10000"},
       "--viewer_width: 10000 is out of range [64, 8192]"},
      {{"--screenshot", "/tmp/x.png"}, "--screenshot needs --viewer"},
      {{"--exit_after_screenshot"}, "--exit_after_screenshot needs --viewer"},
      {{"--viewer", "--exit_after_screenshot"},
       "--exit_after_screenshot needs --screenshot PATH"},
      {{"--map_free_thresh", "0.7"},
       "--map_free_thresh: 0.7 must be below --map_occupied_thresh"},
      {{"--camera_chunk", "65500"}, "--camera_chunk: 65500 is out of range"},
      {{"--bind", ""}, "--bind: empty address"},
      {{"--realtime=maybe"}, "--realtime: 'maybe' is not a boolean"},
      {{"--dataset_dir", LONG_DIR}, "--dataset_dir: longer than"},
      /* the instance name itself (given last, it wins) */
      {{"--instance", "bad/name"}, "--instance"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
    expect_refused(cases[i].args, cases[i].needle);
}

static void test_help(void **state) {
  (void)state;
  char log[512];
  snprintf(log, sizeof log, "%s/help.log", pa_test_tmpdir());
  const char *a[] = {"--help", NULL};
  assert_int_equal(lt_run_playarea(a, log, 10000), 0);
  char text[16384];
  assert_true(pa_test_read_file(log, text, sizeof text) >= 0);
  const char *want[] = {"--tcp_port",
                        "(default 9000)",
                        "--tcp_feedback_hz",
                        "--scan_hz",
                        "--camera_hz",
                        "--control_hz",
                        "--map_yaml",
                        "--map_image",
                        "--map_resolution",
                        "--world",
                        "--instance",
                        "--bind",
                        "--token",
                        "--viewer",
                        "--no-render",
                        "--wrap",
                        "--camera_width",
                        "--laser_beams",
                        "--seed",
                        "--speed",
                        "--max_robots",
                        "--grace_ms",
                        "playarea status",
                        "playarea restart",
                        "playarea discover",
                        "playarea replay",
                        "playarea --version"};
  for (size_t i = 0; i < sizeof want / sizeof *want; i++) {
    if (!strstr(text, want[i]))
      fprintf(stderr, "--help lacks %s\n", want[i]);
    assert_non_null(strstr(text, want[i]));
  }
}

static void test_commands_without_instance(void **state) {
  (void)state;
  char inst[PA_SHM_INSTANCE_MAX], log[512];
  pa_test_instance(inst, sizeof inst, "none");
  snprintf(log, sizeof log, "%s/none.log", pa_test_tmpdir());
  const char *s1[] = {"status", "--instance", inst, NULL};
  assert_int_equal(lt_run_playarea(s1, log, 10000), PA_EXIT_CONFIG);
  const char *s2[] = {"restart", "sim", "--instance", inst, NULL};
  assert_int_equal(lt_run_playarea(s2, log, 10000), PA_EXIT_CONFIG);
  const char *s3[] = {"restart", "gpu", "--instance", inst, NULL};
  assert_int_equal(lt_run_playarea(s3, log, 10000), PA_EXIT_CONFIG);
  const char *s4[] = {"status", "--bogus", NULL};
  assert_int_equal(lt_run_playarea(s4, log, 10000), PA_EXIT_CONFIG);
  char text[8192];
  assert_true(pa_test_read_file(log, text, sizeof text) >= 0);
  assert_non_null(strstr(text, inst));
  assert_non_null(strstr(text, "unknown process"));
  assert_non_null(strstr(text, "--bogus"));
}

/* Sends one beacon datagram text to 127.0.0.1:port. */
static void send_beacon(int fd, uint16_t port, const char *text) {
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  assert_true(sendto(fd, text, strlen(text), 0, (struct sockaddr *)&a,
                     sizeof a) == (ssize_t)strlen(text));
}

/* Issue 32 #15: 256 forged beacons (escape sequences in their fields,
 * ports nobody listens on) and one real stack (its port answers): discover
 * lists the real one first, at most 64, and no control byte reaches the
 * terminal. */
static void test_discover_spoofed(void **state) {
  (void)state;
  uint16_t bport, real;
  int probe = pa_test_udp_bind(&bport);
  assert_true(probe >= 0);
  close(probe);
  int lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  struct sockaddr_in la = {.sin_family = AF_INET};
  la.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t ll = sizeof la;
  assert_int_equal(bind(lfd, (struct sockaddr *)&la, sizeof la), 0);
  assert_int_equal(listen(lfd, 16), 0);
  assert_int_equal(getsockname(lfd, (struct sockaddr *)&la, &ll), 0);
  real = ntohs(la.sin_port);
  char bin[512], bs[16], log[600];
  pa_test_bin(bin, sizeof bin, "playarea");
  snprintf(bs, sizeof bs, "%u", bport);
  static char out[1 << 17];
  for (int json = 0; json < 2; json++) {
    snprintf(log, sizeof log, "%s/discover-spoof%d.log", pa_test_tmpdir(),
             json);
    char *argv[] = {bin,
                    "discover",
                    "--beacon_port",
                    bs,
                    "--bind",
                    "127.0.0.1",
                    "--timeout_ms",
                    "1500",
                    json ? "--json" : NULL,
                    NULL};
    pid_t pid = pa_test_spawn(argv, log);
    assert_true(pid > 0);
    usleep(300000); /* it binds */
    int ufd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    char b[512];
    for (int i = 0; i < 256; i++) {
      snprintf(b, sizeof b,
               "{\"beacon\":\"playarea\",\"instance\":\"spoof%d\\u001b[31m"
               "\\u0007\",\"address\":\"127.0.0.1\",\"tcp_port\":%d,"
               "\"version\":\"\\u001b]0;pwned\\u0007\\u009b2J\"}",
               i, 1 + i);
      send_beacon(ufd, bport, b);
      if (i % 32 == 31)
        usleep(2000); /* not faster than a socket buffer takes */
    }
    snprintf(b, sizeof b,
             "{\"beacon\":\"playarea\",\"instance\":\"the-real-one\","
             "\"address\":\"127.0.0.1\",\"tcp_port\":%u,\"http_port\":0,"
             "\"pid\":1,\"version\":\"1\",\"protocol_version\":2}",
             real);
    send_beacon(ufd, bport, b);
    close(ufd);
    int status = pa_test_stop(pid, 0, 10000);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    long n = pa_test_read_file(log, out, sizeof out);
    assert_true(n > 0);
    for (long i = 0; i < n; i++)
      if ((unsigned char)out[i] < 0x20 && out[i] != '\n')
        fail_msg("a control byte 0x%02x at %ld:\n%s", out[i], i, out);
      else if ((unsigned char)out[i] >= 0x7f)
        fail_msg("a non-ASCII byte 0x%02x at %ld", (unsigned char)out[i], i);
    /* the first stack listed is the real one */
    const char *first = json ? out : strchr(out, '\n') + 1;
    if (strncmp(first, json ? "{" : "the-real-one", json ? 1 : 12) ||
        !strstr(first, "the-real-one") ||
        strstr(first, "the-real-one") > strchr(first, '\n'))
      fail_msg("not listed first:\n%s", out);
    int lines = 0;
    for (const char *p = out; (p = strstr(p, "spoof")); p++)
      lines++;
    assert_true(lines <= 63); /* 64 listed, the real one among them */
    assert_non_null(strstr(out, "more not listed"));
  }
  close(lfd);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_routing),
      cmocka_unit_test(test_shared_and_exact),
      cmocka_unit_test(test_default_instance),
      cmocka_unit_test(test_split),
      cmocka_unit_test(test_backoff),
      cmocka_unit_test(test_proc_names),
      cmocka_unit_test(test_bad_flags),
      cmocka_unit_test(test_help),
      cmocka_unit_test(test_commands_without_instance),
      cmocka_unit_test(test_discover_spoofed),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
