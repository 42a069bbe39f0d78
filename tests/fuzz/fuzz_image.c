/* fuzz_image.c - libFuzzer target: map images (maps/pa_map.c +
 * pa_map_stb.c), one input = one image file's bytes, loaded the way a
 * map.yaml naming it would. The load mode and negate come from the input's
 * length, so one corpus file stays a plain image file and still every mode
 * is exercised across the corpus. */
#include "fuzz_common.h"
#include "pa_map.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  pa_map_def def = pa_map_def_default();
  fz_write("input.img", data, size, def.image, sizeof def.image);
  def.mode = (pa_map_mode)(size % 3);
  def.negate = (int)((size / 3) % 2);
  pa_grid g;
  memset(&g, 0, sizeof g);
  char err[1024];
  err[0] = '\0';
  if (pa_map_load(&def, &g, err, sizeof err) == 0) {
    if (g.width == 0 || g.height == 0 || !g.cells)
      abort();
    /* every cell is a valid occupancy value; reading them all also lets
     * ASan see a grid shorter than width x height */
    for (size_t i = 0; i < (size_t)g.width * g.height; i++)
      if (g.cells[i] < -1 || g.cells[i] > 100)
        abort();
    pa_grid_free(&g);
  } else if (!err[0]) {
    abort();
  }
  return 0;
}
