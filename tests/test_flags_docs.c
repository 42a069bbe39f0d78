/* test_flags_docs.c - the flag tables are the one source of truth: each
 * table is well formed, agrees with its library's def defaults, every
 * program's --help prints every row with its default, and the
 * docs/flags.md and docs/CONTRACT.md flag tables are exactly what the
 * tables generate (no flag missing, none that does not exist). Also the
 * docs as a whole: README.md stays a newcomer's page (at most 200 lines, no
 * flag table), every relative link of README.md and every docs .md has a
 * target, and no doc names a shared-memory layout version other than
 * PA_SHM_LAYOUT_VERSION; docs/actions.md is what the JSON action table
 * generates. Regenerate the tables with scripts/flags-docs.sh. */
#define _GNU_SOURCE
#include "pa_launch.h"
#include "testutil.h"

#include <ctype.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include <cmocka.h>
#include <dirent.h>
#include <unistd.h>

#define BIG (256 * 1024)

typedef struct proc_table {
  const char *exe;
  const pa_opt_table *(*table)(void);
} proc_table;

static const proc_table procs[] = {
    {"pa-sim", pa_sim_opts},
    {"pa-render", pa_render_opts},
    {"pa-netgw", pa_netgw_opts},
};
#define NPROCS (sizeof procs / sizeof procs[0])

/* Runs bin/exe with args; its stdout + stderr into a heap string. */
static char *run_capture(const char *exe, const char *arg, int *rc) {
  char bin[512], log[600];
  pa_test_bin(bin, sizeof bin, exe);
  snprintf(log, sizeof log, "%s/%s%s.out", pa_test_tmpdir(), exe, arg);
  char *argv[] = {bin, (char *)arg, NULL};
  pid_t pid = pa_test_spawn(argv, log);
  assert_true(pid > 0);
  int st = pa_test_stop(pid, 0, 10000);
  *rc = st >= 0 && WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  char *text = calloc(1, BIG);
  assert_non_null(text);
  assert_true(pa_test_read_file(log, text, BIG) >= 0);
  return text;
}

static char *read_src(const char *rel) {
  char path[512];
  pa_test_src(path, sizeof path, rel);
  char *text = calloc(1, BIG);
  assert_non_null(text);
  long n = pa_test_read_file(path, text, BIG);
  assert_true(n > 0 && n < BIG - 1);
  return text;
}

static char *generated(bool contract) {
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  assert_non_null(f);
  pa_launch_flags_markdown(f, contract);
  fclose(f);
  return buf;
}

/* The text between "<!-- flags:begin" (its line) and "<!-- flags:end". */
static char *block(const char *doc, const char *name) {
  const char *b = strstr(doc, "<!-- flags:begin");
  const char *e = b ? strstr(b, "<!-- flags:end") : NULL;
  if (!b || !e)
    fail_msg("%s: no <!-- flags:begin ... --> / <!-- flags:end --> markers",
             name);
  b = strchr(b, '\n') + 1;
  return strndup(b, (size_t)(e - b));
}

/* A section "## Title" up to the next "## ". */
static char *section(const char *doc, const char *title) {
  const char *b = strstr(doc, title);
  assert_non_null(b);
  const char *e = strstr(b + strlen(title), "\n## ");
  return strndup(b, e ? (size_t)(e - b) : strlen(b));
}

static bool known_flag(const char *name) {
  if (!strcmp(name, "help") || !strcmp(name, "help-markdown"))
    return true;
  pa_launch_cfg c = pa_launch_cfg_default();
  pa_opt o[PA_LAUNCH_MAX_FLAGS];
  unsigned to[PA_LAUNCH_MAX_FLAGS];
  size_t n = pa_launch_flag_table(&c, o, to);
  for (size_t k = 0; k < n; k++)
    if (!strcmp(o[k].name, name))
      return true;
  return false;
}

/* Every `--name` written in text is a flag of some table. */
static void check_only_known_flags(const char *text, const char *where) {
  for (const char *p = strstr(text, "--"); p; p = strstr(p + 2, "--")) {
    if (p > text && (isalnum((unsigned char)p[-1]) || p[-1] == '-'))
      continue; /* "|---|" rules, a-b--c */
    char name[64];
    size_t n = 0;
    const char *q = p + 2;
    while ((isalnum((unsigned char)*q) || *q == '_' || *q == '-') &&
           n + 1 < sizeof name)
      name[n++] = *q++;
    name[n] = '\0';
    if (n == 0 || name[0] == '-')
      continue;
    if (!known_flag(name))
      fail_msg("%s names --%s, which no flag table has", where, name);
  }
}

static void test_tables_well_formed(void **state) {
  (void)state;
  for (size_t p = 0; p < NPROCS; p++) {
    const pa_opt_table *t = procs[p].table();
    assert_string_equal(t->prog, procs[p].exe);
    assert_true(t->n > 0 && t->n <= PA_OPT_MAX);
    void *args = calloc(1, t->args_size);
    pa_opt_row rows[PA_OPT_MAX];
    char err[256];
    if (pa_opt_bind(t, args, rows, err, sizeof err) != 0)
      fail_msg("%s", err);
    pa_opt_defaults(t, args);
    for (size_t k = 0; k < t->n; k++) {
      const pa_opt *o = &rows[k].o;
      assert_non_null(o->help);
      assert_true(strlen(o->help) > 0);
      for (const char *c = o->name; *c; c++)
        assert_true(islower((unsigned char)*c) || isdigit((unsigned char)*c) ||
                    *c == '_');
      for (size_t j = 0; j < k; j++)
        if (!strcmp(rows[j].o.name, o->name))
          fail_msg("%s: --%s twice", t->prog, o->name);
      /* The default passes the row's own parser (range, length). */
      char text[512];
      if (pa_opt_format(&rows[k], text, sizeof text) &&
          pa_opt_set(&rows[k], text, err, sizeof err) != 0)
        fail_msg("%s default: %s", t->prog, err);
    }
    /* Defaults pass the cross-flag checks: a bare process starts (strings
     * set above point into text[]: defaults again). */
    pa_opt_defaults(t, args);
    bool given[PA_OPT_MAX] = {false};
    if (t->finish && t->finish(args, given, err, sizeof err) != 0)
      fail_msg("%s defaults: %s", t->prog, err);
    free(args);
  }
}

/* A flag several processes take means the same: type and default. */
static void test_shared_flags_agree(void **state) {
  (void)state;
  int shared = 0;
  for (size_t p = 0; p < NPROCS; p++)
    for (size_t q = p + 1; q < NPROCS; q++) {
      const pa_opt_table *a = procs[p].table(), *b = procs[q].table();
      for (size_t i = 0; i < a->n; i++)
        for (size_t j = 0; j < b->n; j++) {
          if (strcmp(a->rows[i].o.name, b->rows[j].o.name))
            continue;
          char da[300], db[300];
          pa_opt_default_text(&a->rows[i], da, sizeof da);
          pa_opt_default_text(&b->rows[j], db, sizeof db);
          if (strcmp(da, db))
            fail_msg("--%s: default %s in %s, %s in %s", a->rows[i].o.name, da,
                     a->prog, db, b->prog);
          shared++;
        }
    }
  assert_true(shared >= 4); /* instance x3, realtime */
}

/* Each row that fills a library def field has the default the library's
 * pa_*_def_default() gives (the process starts from those, then the
 * table's): rows, not a second list, are the defaults. */
static void check_lib_defaults(const pa_opt_table *t, const void *lib,
                               size_t def_end, const char *const *skip) {
  void *ours = calloc(1, t->args_size);
  void *theirs = calloc(1, t->args_size);
  memcpy(theirs, lib, t->args_size);
  pa_opt_defaults(t, ours);
  pa_opt_row a[PA_OPT_MAX], b[PA_OPT_MAX];
  char err[256];
  assert_int_equal(pa_opt_bind(t, ours, a, err, sizeof err), 0);
  assert_int_equal(pa_opt_bind(t, theirs, b, err, sizeof err), 0);
  int compared = 0;
  for (size_t k = 0; k < t->n; k++) {
    bool skipped = a[k].off >= def_end;
    for (size_t s = 0; skip[s]; s++)
      skipped = skipped || !strcmp(skip[s], a[k].o.name);
    if (skipped)
      continue;
    char x[512], y[512];
    bool hx = pa_opt_format(&a[k], x, sizeof x);
    bool hy = pa_opt_format(&b[k], y, sizeof y);
    if (hx != hy || strcmp(x, y))
      fail_msg("%s --%s: table default '%s', library default '%s'", t->prog,
               a[k].o.name, hx ? x : "(unset)", hy ? y : "(unset)");
    compared++;
  }
  assert_true(compared > 0);
  free(ours);
  free(theirs);
}

static void test_library_defaults_agree(void **state) {
  (void)state;
  /* The library's instance "" means "no instance"; the process's p9000. */
  const char *const sim_skip[] = {"instance", NULL};
  pa_sim_args sa = {.def = pa_sim_def_default(), .map = pa_map_flags_default()};
  /* simd is the flag's text alone (def.simd is what the library has) */
  check_lib_defaults(pa_sim_opts(), &sa, offsetof(pa_sim_args, simd), sim_skip);
  const char *const none[] = {NULL};
  /* An embedded gateway (the tests') serves no HTTP unless asked; the
   * process serves --http_port 8080. */
  const char *const netgw_skip[] = {"http_port", NULL};
  pa_netgw_args na = {.def = pa_netgw_def_default()};
  check_lib_defaults(pa_netgw_opts(), &na,
                     offsetof(pa_netgw_args, def) + sizeof na.def, netgw_skip);
#ifdef PA_TEST_HAVE_RENDER
  pa_render_def rd = pa_render_def_default();
  check_lib_defaults(pa_render_opts(), &rd, sizeof rd, none);
#endif
}

/* `X --help` prints every row of its table with its default. */
static void check_help(const char *exe, const pa_opt_table *t) {
  int rc;
  char *text = run_capture(exe, "--help", &rc);
  if (rc != 0)
    fail_msg("%s --help: exit %d\n%s", exe, rc, text);
  for (size_t k = 0; k < t->n; k++) {
    char def[300], want[400];
    pa_opt_default_text(&t->rows[k], def, sizeof def);
    snprintf(want, sizeof want, "(default %s)", def);
    char flag[80];
    snprintf(flag, sizeof flag, "  --%s ", t->rows[k].o.name);
    const char *line = strstr(text, flag);
    if (!line)
      fail_msg("%s --help lacks --%s", exe, t->rows[k].o.name);
    const char *eol = strchr(line, '\n');
    char *l = strndup(line, eol ? (size_t)(eol - line) : strlen(line));
    if (!strstr(l, want))
      fail_msg("%s --help: '%s' lacks %s", exe, l, want);
    free(l);
  }
  free(text);
}

static void test_help_of_every_program(void **state) {
  (void)state;
  check_help("pa-sim", pa_sim_opts());
  check_help("pa-netgw", pa_netgw_opts());
#ifdef PA_TEST_HAVE_RENDER
  check_help("pa-render", pa_render_opts());
#endif
  /* playarea: every process's every row, once per name, with [owners]. */
  int rc;
  char *text = run_capture("playarea", "--help", &rc);
  assert_int_equal(rc, 0);
  for (size_t p = 0; p < NPROCS; p++) {
    const pa_opt_table *t = procs[p].table();
    for (size_t k = 0; k < t->n; k++) {
      char flag[80];
      snprintf(flag, sizeof flag, "  --%s ", t->rows[k].o.name);
      const char *first = strstr(text, flag);
      if (!first)
        fail_msg("playarea --help lacks --%s", t->rows[k].o.name);
      assert_null(strstr(first + 1, flag)); /* once */
    }
  }
  assert_non_null(strstr(text, "--realtime               [sim, netgw]"));
  assert_non_null(strstr(text, "--instance               [all]"));
  free(text);
}

static void check_doc(const char *rel, bool contract, const char *title) {
  char *doc = read_src(rel);
  char *have = block(doc, rel);
  char *want = generated(contract);
  if (strcmp(have, want)) {
    /* Name the first line that differs (cmocka cuts long messages). */
    const char *h = have, *w = want;
    int line = 1;
    while (*h && *h == *w) {
      line += *h == '\n';
      h++;
      w++;
    }
    while (h > have && h[-1] != '\n') {
      h--;
      w--;
    }
    fprintf(stderr,
            "%s line %d of the flags block:\n  doc:       %.*s\n"
            "  generated: %.*s\n",
            rel, line, (int)strcspn(h, "\n"), h, (int)strcspn(w, "\n"), w);
    fail_msg("%s's flag table differs from the flag tables; regenerate it "
             "with scripts/flags-docs.sh (`playarea --help-markdown%s`)",
             rel, contract ? "=contract" : "");
  }
  /* The binary prints the same. */
  int rc;
  char *out = run_capture(
      "playarea", contract ? "--help-markdown=contract" : "--help-markdown",
      &rc);
  assert_int_equal(rc, 0);
  assert_string_equal(out, want);
  /* Prose around the table names only flags that exist. */
  char *flags = section(doc, title);
  check_only_known_flags(flags, rel);
  free(flags);
  free(out);
  free(want);
  free(have);
  free(doc);
}

static void test_flags_md_table(void **state) {
  (void)state;
  check_doc("docs/flags.md", false, "# Flags");
  /* every flag, once, with its default in the default column */
  char *want = generated(false);
  pa_launch_cfg c = pa_launch_cfg_default();
  pa_opt o[PA_LAUNCH_MAX_FLAGS];
  unsigned to[PA_LAUNCH_MAX_FLAGS];
  size_t n = pa_launch_flag_table(&c, o, to);
  for (size_t k = 0; k < n; k++) {
    char row[80];
    snprintf(row, sizeof row, "| `--%s` | ", o[k].name);
    assert_non_null(strstr(want, row));
  }
  free(want);
}

static void test_contract_rows(void **state) {
  (void)state;
  check_doc("docs/CONTRACT.md", true, "## Flags");
}

/* The checker itself: a made-up flag in a docs text is caught. */
static void test_checker_catches_drift(void **state) {
  (void)state;
  assert_true(known_flag("tcp_port"));
  assert_true(known_flag("no-render"));
  assert_false(known_flag("tcp_prot"));
  char *want = generated(false);
  assert_non_null(strstr(want, "| `--robots` | 1 | sim |"));
  assert_non_null(strstr(want, "| `--bind` | `127.0.0.1` | netgw |"));
  free(want);
}

/* docs/actions.md's table is what the action table generates, and
 * `pa-netgw --help-actions` prints the same. */
static void test_actions_md_table(void **state) {
  (void)state;
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  assert_non_null(f);
  pa_netgw_actions_markdown(f);
  fclose(f);
  char *doc = read_src("docs/actions.md");
  const char *b = strstr(doc, "<!-- actions:begin");
  const char *e = b ? strstr(b, "<!-- actions:end") : NULL;
  if (!b || !e)
    fail_msg("docs/actions.md: no <!-- actions:begin --> / <!-- actions:end "
             "--> markers");
  b = strchr(b, '\n') + 1;
  if (strlen(buf) != (size_t)(e - b) || strncmp(buf, b, (size_t)(e - b))) {
    const char *h = b, *w = buf;
    while (h < e && *h == *w) {
      h++;
      w++;
    }
    while (h > b && h[-1] != '\n') {
      h--;
      w--;
    }
    fprintf(stderr, "docs/actions.md:\n  doc:       %.*s\n  generated: %.*s\n",
            (int)strcspn(h, "\n"), h, (int)strcspn(w, "\n"), w);
    fail_msg("docs/actions.md's table differs from the JSON action table "
             "(netgw/json/json_table.c); regenerate it with "
             "scripts/flags-docs.sh (`pa-netgw --help-actions`)");
  }
  /* well formed: a header, then one row per action, the known ones in */
  assert_non_null(strstr(buf, "| `get_state` | `command` | `robot` | no | "));
  assert_non_null(
      strstr(buf, "| `pause` | `command`, `sim_control` | — | yes"));
  assert_non_null(strstr(buf, "| `auth` | `command` | `token` | no | "
                              "answered before `auth` |"));
  int rows = 0;
  for (const char *p = buf; (p = strstr(p, "\n| `")); p++)
    rows++;
  assert_true(rows >= 90);
  int rc;
  char *out = run_capture("pa-netgw", "--help-actions", &rc);
  assert_int_equal(rc, 0);
  assert_string_equal(out, buf);
  free(out);
  free(doc);
  free(buf);
}

/* README.md is the newcomer's page: short, the flag table lives in
 * docs/flags.md. */
static void test_readme_for_a_newcomer(void **state) {
  (void)state;
  char *doc = read_src("README.md");
  int lines = 0;
  for (const char *p = doc; *p; p++)
    lines += *p == '\n';
  if (lines > 200)
    fail_msg("README.md has %d lines (at most 200: details go to docs/)",
             lines);
  if (strstr(doc, "<!-- flags:begin"))
    fail_msg("README.md holds a flag table; it belongs in docs/flags.md");
  assert_non_null(strstr(doc, "(docs/flags.md)"));
  assert_non_null(strstr(doc, "(docs/actions.md)"));
  free(doc);
}

/* The Markdown docs checked as a whole: README.md and every docs .md file. */
static size_t doc_list(char names[][64], size_t max) {
  size_t n = 0;
  snprintf(names[n++], 64, "README.md");
  char dir[512];
  pa_test_src(dir, sizeof dir, "docs");
  DIR *d = opendir(dir);
  assert_non_null(d);
  for (struct dirent *e; (e = readdir(d)) && n < max;) {
    size_t len = strlen(e->d_name);
    if (len > 3 && len < 50 && !strcmp(e->d_name + len - 3, ".md")) {
      memcpy(names[n], "docs/", 5);
      memcpy(names[n++] + 5, e->d_name, len + 1); /* len < 50: fits 64 */
    }
  }
  closedir(d);
  return n;
}

/* Every relative link target "](path)" of one doc exists (anchors and
 * URLs are not checked). */
static void check_links(const char *rel, const char *doc) {
  char base[256];
  snprintf(base, sizeof base, "%s", rel);
  char *slash = strrchr(base, '/');
  if (slash)
    slash[1] = '\0';
  else
    base[0] = '\0';
  for (const char *p = strstr(doc, "]("); p; p = strstr(p + 2, "](")) {
    const char *t = p + 2;
    size_t n = strcspn(t, ")# \n");
    if (n == 0 || strchr("#", *t) || !strncmp(t, "http://", 7) ||
        !strncmp(t, "https://", 8) || !strncmp(t, "mailto:", 7))
      continue;
    char target[512], path[1024];
    snprintf(target, sizeof target, "%s%.*s", base, (int)n, t);
    pa_test_src(path, sizeof path, target);
    if (access(path, F_OK) != 0)
      fail_msg("%s links to %.*s, which does not exist", rel, (int)n, t);
  }
}

static void test_doc_links_resolve(void **state) {
  (void)state;
  char names[64][64];
  size_t n = doc_list(names, 64);
  assert_true(n > 5);
  for (size_t k = 0; k < n; k++) {
    char *doc = read_src(names[k]);
    check_links(names[k], doc);
    free(doc);
  }
}

/* The first layout version a doc names that is not `want` (0: none).
 * "layout version is 6, expected 7" names 7, the one the code has. */
static unsigned other_layout_version(const char *doc, unsigned want) {
  static const char *const keys[] = {"layout version", "layout_version",
                                     "LAYOUT_VERSION"};
  for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++)
    for (const char *p = strstr(doc, keys[k]); p; p = strstr(p + 1, keys[k])) {
      const char *q = p + strlen(keys[k]);
      /* `":7`, ` 7`, ` is 6`, `` ` (layout version 7`` */
      while (*q == '"' || *q == ':' || *q == ' ' || *q == '`')
        q++;
      if (!strncmp(q, "is ", 3))
        q += 3;
      if (!isdigit((unsigned char)*q))
        continue;
      char *end;
      unsigned long v = strtoul(q, &end, 10);
      if (!strncmp(end, ", expected ", 11))
        v = strtoul(end + 11, NULL, 10);
      if (v != want)
        return (unsigned)v;
    }
  return 0;
}

static void test_doc_layout_version(void **state) {
  (void)state;
  char names[64][64];
  size_t n = doc_list(names, 64);
  for (size_t k = 0; k < n; k++) {
    char *doc = read_src(names[k]);
    unsigned v = other_layout_version(doc, PA_SHM_LAYOUT_VERSION);
    if (v)
      fail_msg("%s names shared-memory layout version %u; the code's is %u "
               "(PA_SHM_LAYOUT_VERSION, shm/pa_layout.h)",
               names[k], v, (unsigned)PA_SHM_LAYOUT_VERSION);
    free(doc);
  }
}

/* The checkers themselves. */
static void test_layout_checker_catches_drift(void **state) {
  (void)state;
  assert_int_equal(other_layout_version("\"shm_layout_version\":2,", 7), 2);
  assert_int_equal(other_layout_version("(layout version 3;", 7), 3);
  assert_int_equal(other_layout_version("is 6, expected 7", 7), 0);
  assert_int_equal(
      other_layout_version("\"layout version is 1, expected 2\"", 7), 2);
  assert_int_equal(other_layout_version("\"shm_layout_version\":7,", 7), 0);
  assert_int_equal(other_layout_version("the layout version a reader", 7), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_tables_well_formed),
      cmocka_unit_test(test_shared_flags_agree),
      cmocka_unit_test(test_library_defaults_agree),
      cmocka_unit_test(test_help_of_every_program),
      cmocka_unit_test(test_flags_md_table),
      cmocka_unit_test(test_actions_md_table),
      cmocka_unit_test(test_readme_for_a_newcomer),
      cmocka_unit_test(test_doc_links_resolve),
      cmocka_unit_test(test_doc_layout_version),
      cmocka_unit_test(test_layout_checker_catches_drift),
      cmocka_unit_test(test_contract_rows),
      cmocka_unit_test(test_checker_catches_drift),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
