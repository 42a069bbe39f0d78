#!/usr/bin/env bash
# Installs every Debian package playarea needs (only what is missing), then
# configures and builds. Idempotent: on a machine that has everything it runs
# no apt command at all.
#
#   scripts/setup.sh [--build-dir DIR] [--sanitize] [--no-build] [--test-deps]
#                    [--python-user] [-- extra cmake args]
#
#   --build-dir DIR  build here (default: build/ in the source tree)
#   --sanitize       ASan + UBSan build
#   --no-build       install the packages only
#   --test-deps      also the tests' npm packages (tests/web; tests/run.sh
#                    passes it; running the stack never needs npm)
#   --python-user    make /usr/bin/python3 find clients/python: a playarea.pth
#                    naming it in your user site-packages (no pip; works under
#                    Debian's externally-managed marker, PEP 668)
#   -h, --help       this text
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build_dir="$root/build"
sanitize=OFF
do_build=1
test_deps=0
python_user=0
extra=()
while (($#)); do
  case $1 in
    --build-dir)
      (($# >= 2)) || { echo "setup.sh: --build-dir needs a directory" >&2; exit 2; }
      build_dir=$2; shift 2 ;;
    --sanitize) sanitize=ON; shift ;;
    --no-build) do_build=0; shift ;;
    --test-deps) test_deps=1; shift ;;
    --python-user) python_user=1; shift ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; exit 0 ;;
    --) shift; extra=("$@"); break ;;
    *) echo "setup.sh: unknown argument '$1' (see scripts/setup.sh --help)" >&2; exit 2 ;;
  esac
done

packages=(
  build-essential cmake pkg-config git clang-format-14
  libevent-dev libyaml-dev libjansson-dev libcmocka-dev libstb-dev libassimp-dev
  libglfw3-dev libegl-dev libgl-dev libegl-mesa0 libgl1-mesa-dri libgbm1
  python3-glad python3-numpy python3-matplotlib python3-distributed python3-setuptools python3-pip
  python3-wheel python3-venv
  procps netcat-openbsd
  libwslay-dev libzstd-dev zlib1g-dev libturbojpeg0-dev libjpeg62-turbo-dev
  libprotobuf-c-dev protobuf-c-compiler protobuf-compiler python3-protobuf
  libavcodec-dev libavformat-dev libavutil-dev libswscale-dev ffmpeg
)
# Only the tests use these (the viewer under xvfb, --wrap tools, the fuzz
# build, /metrics parsing, the browser tests, the caster's AArch64 check
# under qemu-user): --test-deps.
test_packages=(xvfb xauth strace valgrind gdb clang libclang-rt-14-dev
  python3-prometheus-client prometheus chromium nodejs
  gcc-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user)

((test_deps)) && packages+=("${test_packages[@]}")
# Debian's nodejs comes without npm (package npm); a nodejs built elsewhere
# (NodeSource's) carries npm itself and conflicts with Debian's npm package.
((test_deps)) && ! command -v npm >/dev/null 2>&1 && packages+=(npm)
missing=()
for p in "${packages[@]}"; do
  status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
  [[ $status == "install ok installed" ]] || missing+=("$p")
done

if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  sudo=()
  ((EUID == 0)) || sudo=(sudo)
  export DEBIAN_FRONTEND=noninteractive
  # Update the package lists only when an install from the current lists fails.
  if ! "${sudo[@]}" apt-get install -y --no-install-recommends "${missing[@]}"; then
    "${sudo[@]}" apt-get update
    "${sudo[@]}" apt-get install -y --no-install-recommends "${missing[@]}"
  fi
fi

# The browser and Foxglove/MCAP client tests' npm packages, pinned in
# tests/web/package-lock.json; installed again only when the lockfile changes.
# A node_modules that is a symlink (a git worktree sharing another checkout's
# install) is left alone: npm ci would empty the directory it points to.
web=$root/tests/web
if ((test_deps)) && [[ ! -L $web/node_modules ]] && [[ ! -f $web/node_modules/.package-lock.json || $web/package-lock.json -nt $web/node_modules/.package-lock.json ]]; then
  echo "setup: npm ci in tests/web"
  (cd "$web" && npm ci --no-audit --no-fund --loglevel=error)
fi

# The Python client for the system interpreter: a .pth file is how
# site-packages names a directory; pip is not involved, so PEP 668's marker
# does not apply and nothing outside the user's site is written.
if ((python_user)); then
  site=$(/usr/bin/python3 -c 'import site, sys; sys.exit("user site-packages are disabled") if not site.ENABLE_USER_SITE else print(site.getusersitepackages())')
  mkdir -p "$site"
  echo "$root/clients/python" >"$site/playarea.pth"
  echo "setup: $site/playarea.pth -> $root/clients/python"
fi

((do_build)) || exit 0

# Warnings are errors where PA_WERROR=ON (.ci/run sets it) or under CI.
werror=${PA_WERROR:-OFF}
[[ -n ${CI:-} ]] && werror=ON
cmake -S "$root" -B "$build_dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DPA_WERROR="$werror" -DPA_SANITIZE="$sanitize" "${extra[@]}" >/dev/null
cmake --build "$build_dir" -j"$(nproc)"
