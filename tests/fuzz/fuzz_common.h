/* fuzz_common.h - what the file-reading fuzz targets share: a private
 * directory made once per process, where each input is written to a file
 * under a fixed name before the loader under test reads it back. */
#ifndef PA_FUZZ_COMMON_H
#define PA_FUZZ_COMMON_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char fz_dir[512];

static void fz_dir_remove(void) {
  if (!fz_dir[0])
    return;
  char p[600];
  static const char *const names[] = {"input.yaml", "map.yaml", "world.yaml",
                                      "input.img", NULL};
  for (int i = 0; names[i]; i++) {
    snprintf(p, sizeof p, "%s/%s", fz_dir, names[i]);
    unlink(p);
  }
  rmdir(fz_dir);
  fz_dir[0] = '\0';
}

/* Writes data to fz_dir/name (the directory made on first use, removed at
 * exit); the path goes into path. Aborts when the file system fails, which
 * is the harness's fault, not the target's. */
static void fz_write(const char *name, const uint8_t *data, size_t size,
                     char *path, size_t path_sz) {
  if (!fz_dir[0]) {
    const char *tmp = getenv("TMPDIR");
    snprintf(fz_dir, sizeof fz_dir, "%s/pa-fuzz-XXXXXX",
             tmp && tmp[0] ? tmp : "/tmp");
    if (!mkdtemp(fz_dir)) {
      perror("fuzz: mkdtemp");
      abort();
    }
    atexit(fz_dir_remove);
  }
  snprintf(path, path_sz, "%s/%s", fz_dir, name);
  FILE *f = fopen(path, "wb");
  if (!f || (size && fwrite(data, 1, size, f) != size) || fclose(f) != 0) {
    perror("fuzz: writing the input file");
    abort();
  }
}

#endif
