#!/bin/sh
# obs_cross.sh SOURCE_DIR OUT_DIR - cross-builds tests/test_obs_sectors.c
# with shm/pa_obs.c for AArch64 (the flags of the project's build: gnu11,
# -O2, warnings as errors) and runs it under qemu-user: the NEON path of
# pa_obs_sectors equal to the rule beam by beam. Exit 77 (ctest: skipped)
# when aarch64-linux-gnu-gcc or qemu-aarch64 is missing (Debian
# gcc-aarch64-linux-gnu, qemu-user; scripts/setup.sh --test-deps).
set -eu
src=${1:?usage: obs_cross.sh SOURCE_DIR OUT_DIR}
out=${2:?usage: obs_cross.sh SOURCE_DIR OUT_DIR}
. "$(dirname "$0")/cross_tools.sh"
mkdir -p "$out"
"$cc" -std=gnu11 -O2 -g -Wall -Wextra -Wpedantic -Wshadow -Werror \
  -I"$src/shm" -I"$src/common" \
  "$src/tests/test_obs_sectors.c" "$src/shm/pa_obs.c" -lm \
  -o "$out/test_obs_sectors_aarch64"
exec "$qemu" -L "$sysroot" "$out/test_obs_sectors_aarch64"
