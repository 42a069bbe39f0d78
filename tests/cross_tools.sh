# cross_tools.sh - sourced by the AArch64 cross tests (sim_cast_cross.sh,
# obs_cross.sh): sets cc, qemu and sysroot (PA_CROSS_CC, PA_CROSS_QEMU,
# PA_CROSS_SYSROOT override them) and exits 77 (ctest: skipped) when one is
# missing (Debian gcc-aarch64-linux-gnu, qemu-user, libc6-dev-arm64-cross:
# scripts/setup.sh --test-deps).
cc=${PA_CROSS_CC:-aarch64-linux-gnu-gcc}
qemu=${PA_CROSS_QEMU:-qemu-aarch64}
sysroot=${PA_CROSS_SYSROOT:-/usr/aarch64-linux-gnu}
for tool in "$cc" "$qemu"; do
  if ! command -v "$tool" >/dev/null 2>&1; then
    echo "SKIPPED: $tool not found (Debian gcc-aarch64-linux-gnu and" \
      "qemu-user: scripts/setup.sh --test-deps)"
    exit 77
  fi
done
if [ ! -d "$sysroot" ]; then
  echo "SKIPPED: no AArch64 sysroot at $sysroot (libc6-dev-arm64-cross)"
  exit 77
fi
