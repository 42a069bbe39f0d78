#!/bin/sh
# sim_cast_cross.sh SOURCE_DIR OUT_DIR [POSES] - cross-builds
# tests/test_sim_cast_exact.c with the caster's sources for AArch64 (the
# flags pa_sim's build uses: gnu11, -O2, warnings as errors) and runs it under
# qemu-user: every cast of the portable path (NEON there) and the scalar one
# equal to the plain traversal. Exit 77 (ctest: skipped) when
# aarch64-linux-gnu-gcc or qemu-aarch64 is missing (Debian
# gcc-aarch64-linux-gnu, qemu-user; scripts/setup.sh --test-deps).
set -eu
src=${1:?usage: sim_cast_cross.sh SOURCE_DIR OUT_DIR [POSES]}
out=${2:?usage: sim_cast_cross.sh SOURCE_DIR OUT_DIR [POSES]}
poses=${3:-120}
. "$(dirname "$0")/cross_tools.sh"
mkdir -p "$out"
s=$src/sim
# -Wno-psabi: vectors wider than the baseline's pass between static
# functions only (as sim/CMakeLists.txt says for the portable file)
"$cc" -std=gnu11 -O2 -g -DPA_CAST_STANDALONE \
  -Wall -Wextra -Wpedantic -Wshadow -Werror -Wno-psabi \
  -I"$s" -I"$s/private" -I"$src/maps" -I"$src/shm" -I"$src/common" \
  "$src/tests/test_sim_cast_exact.c" "$s/sim_cast.c" "$s/sim_cast_portable.c" \
  "$s/sim_cast_avx2.c" "$s/sim_cast_avx512.c" "$s/sim_ray.c" \
  "$s/sim_faces.c" "$s/sim_simd_cpu.c" -lm -lpthread -o "$out/test_sim_cast_exact_aarch64"
file "$out/test_sim_cast_exact_aarch64" 2>/dev/null || true
exec "$qemu" -L "$sysroot" "$out/test_sim_cast_exact_aarch64" "$poses"
