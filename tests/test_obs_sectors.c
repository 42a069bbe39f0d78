/* test_obs_sectors.c - pa_obs_sectors (shm/pa_obs.c) against the rule
 * beam by beam: every sector width of a 360-beam scan, with and without
 * NaNs. Plain C (no cmocka), so that obs_cross.sh builds the same file for
 * AArch64, where the four-at-a-time path is NEON, and runs it under qemu.
 * Exit 0: every sector equal. */
#include "pa_shm.h"

#include <math.h>
#include <stdio.h>

int main(void) {
  const float N = NAN;
  float scan[360], got[360];
  unsigned bad = 0, checked = 0;
  for (int pass = 0; pass < 4; pass++) {
    for (unsigned i = 0; i < 360; i++)
      scan[i] = (float)((i * 7919u) % 1009u) / 100.0f;
    if (pass == 1)
      scan[123] = N; /* one NaN: its sector's least of the others */
    if (pass == 2)
      for (unsigned i = 120; i < 130; i++)
        scan[i] = N; /* a whole sector of 10 */
    if (pass == 3)
      for (unsigned i = 0; i < 360; i++)
        scan[i] = N; /* no scan yet */
    for (unsigned b = 1; b <= 360; b++) {
      pa_obs_sectors(got, b, scan, 360);
      for (unsigned j = 0; j < b; j++) {
        float m = N;
        for (unsigned i = j * 360 / b; i < (j + 1) * 360 / b; i++)
          m = scan[i] < m || isnan(m) ? scan[i] : m;
        checked++;
        if (!(got[j] == m || (isnan(got[j]) && isnan(m)))) {
          if (bad++ < 5)
            fprintf(stderr, "pass %d, %u sectors: [%u] %g, want %g\n", pass, b,
                    j, (double)got[j], (double)m);
        }
      }
    }
  }
  printf("test_obs_sectors: %u of %u sectors differ\n", bad, checked);
  return bad != 0;
}
