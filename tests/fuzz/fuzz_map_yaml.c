/* fuzz_map_yaml.c - libFuzzer target: map.yaml (maps/pa_map_yaml.c), one
 * input = one file's bytes, parsed as pa_map_parse_yaml does after reading
 * the file (from memory: its 16 MB read buffer costs ~2.5 ms per call under
 * ASan, fuzz_world goes through the file path). Only parsed: the image it
 * names is not loaded (fuzz_image covers images, and a path could name any
 * file). */
#include "pa_map.h"
#include "pa_map_int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  /* an exact-size heap copy, so ASan sees any read past the end */
  unsigned char *buf = malloc(size ? size : 1);
  if (!buf)
    return 0;
  memcpy(buf, data, size);
  pa_map_def def = pa_map_def_default();
  char err[1024];
  err[0] = '\0';
  pa_ydoc d;
  int rc = pa_map_ydoc_load_buf(&d, "map.yaml", buf, size, err, sizeof err);
  if (rc == 0) {
    rc = pa_map_def_from_node(&d, pa_map_ydoc_root(&d), "/fuzz", &def, err,
                              sizeof err);
    pa_map_ydoc_free(&d);
  }
  if (rc == 0) {
    /* an accepted map is usable: what pa_map_load trusts */
    if (!(def.resolution > 0) || !isfinite(def.resolution) ||
        !isfinite(def.origin[0]) || !isfinite(def.origin[1]) ||
        !isfinite(def.origin[2]) ||
        memchr(def.image, '\0', sizeof def.image) == NULL)
      abort();
  } else if (!err[0]) {
    abort(); /* a refusal always says why */
  }
  free(buf);
  return 0;
}
