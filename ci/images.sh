#!/usr/bin/env bash
# Builds the two images of the `containers` environment from this machine's
# own files, pulling nothing (there may be no registry at all):
#
#   overload-harness/sut:local    the `sut` and `harness` binaries, their shared
#                                 libraries, and the Vulkan loader + Mesa's
#                                 lavapipe driver, so pool containers run pages
#                                 through wgpu; `harness` is there for the load
#                                 agents and the coordinator (`render k8s`)
#   overload-harness/redis:local  this machine's redis-server and its libraries
#   overload-harness/haproxy:local, overload-harness/nginx:local
#                                 this machine's haproxy and nginx, for a proxy
#                                 gateway in containers (each built only where
#                                 its binary is installed)
#
# Each is `FROM scratch` plus a root filesystem assembled with ldd. Usage:
#   bash ci/images.sh [--release] [--sut-tag NAME:TAG] [--redis-tag NAME:TAG]
#                     [--proxies-only]
# Needs: docker, cargo, redis-server, mesa-vulkan-drivers (for the GPU path;
# without it the pools fall back to the CPU and say so loudly); haproxy and
# nginx-light for the proxy images.
set -euo pipefail
cd "$(dirname "$0")/.."

profile=debug
sut_tag=overload-harness/sut:local
redis_tag=overload-harness/redis:local
proxies_only=no
while [ $# -gt 0 ]; do
  case "$1" in
    --release) profile=release ;;
    --sut-tag) sut_tag="$2"; shift ;;
    --redis-tag) redis_tag="$2"; shift ;;
    --proxies-only) proxies_only=yes ;;
    -h|--help) sed -n 2,19p "$0"; exit 0 ;;
    *) echo "images.sh: unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done

command -v docker >/dev/null || { echo "images.sh: docker is not installed" >&2; exit 2; }
[ "$proxies_only" = yes ] || command -v redis-server >/dev/null || { echo "images.sh: redis-server is not installed (apt-get install -y redis-server)" >&2; exit 2; }

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# Copies a file and every shared library it links against into $1.
add_with_libs() {
  local root="$1"; shift
  for f in "$@"; do
    [ -e "$f" ] || continue
    mkdir -p "$root$(dirname "$f")"
    cp -L "$f" "$root$f"
    ldd "$f" 2>/dev/null | grep -o '/[^ ]*' | while read -r lib; do
      [ -e "$root$lib" ] && continue
      mkdir -p "$root$(dirname "$lib")"
      cp -L "$lib" "$root$lib"
    done
  done
}

# --- haproxy, nginx ------------------------------------------------------
# Debian's proxy binaries as they run on this machine, for a proxy gateway
# in the containers environment (`containers/proxy.rs` copies in the filled
# configuration): the binary and its libraries, and what each opens besides
# its file. nginx's master drops its workers to `nobody`, so the image
# carries a passwd and group with that user (and an nsswitch.conf that reads
# them), and its compiled-in folders /var/lib/nginx and /var/log/nginx.
proxy_image() {
  local kind="$1" bin tag="overload-harness/$1:local" package="$1"
  [ "$kind" = nginx ] && package=nginx-light
  bin="$(command -v "$kind" || true)"
  if [ -z "$bin" ]; then
    echo "images.sh: $kind is not installed, so $tag is not built (apt-get install -y $package)" >&2
    return 0
  fi
  local root="$work/$kind/rootfs"
  mkdir -p "$root/tmp" "$root/etc/$kind" "$root/run" "$root/var/log/harness"
  chmod 1777 "$root/tmp"
  add_with_libs "$root" "$bin"
  printf 'root:x:0:0:root:/root:/sbin/nologin\nnobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin\n' >"$root/etc/passwd"
  printf 'root:x:0:\nnogroup:x:65534:\n' >"$root/etc/group"
  printf 'passwd: files\ngroup: files\nhosts: files dns\n' >"$root/etc/nsswitch.conf"
  [ "$kind" = nginx ] && mkdir -p "$root/var/lib/nginx" "$root/var/log/nginx"
  printf 'FROM scratch\nCOPY rootfs/ /\nEXPOSE 8080\nENTRYPOINT ["%s"]\n' "$bin" >"$work/$kind/Dockerfile"
  docker build -q -t "$tag" "$work/$kind" >/dev/null
  echo "images.sh: built $tag ($(du -sh "$root" | cut -f1), $("$bin" -v 2>&1 | head -1))"
}
proxy_image haproxy
proxy_image nginx
[ "$proxies_only" = yes ] && exit 0

# --- sut ---------------------------------------------------------------
# One build of both binaries with the workspace's features, the set that
# `cargo test --workspace` and `cargo run -p harness` also build with: `-p
# system-under-test` alone resolved other features and compiled about 180
# dependencies a second time (4 min 16 s of a clean CI run on 2 cores).
cargo_flags=(-j2 -q --workspace --bin sut --bin harness)
[ "$profile" = release ] && cargo_flags+=(--release)
cargo build "${cargo_flags[@]}"
target_dir="${CARGO_TARGET_DIR:-$(cargo metadata --format-version 1 --no-deps | python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')}"
bin="$target_dir/$profile/sut"
harness_bin="$target_dir/$profile/harness"
for b in "$bin" "$harness_bin"; do
  [ -x "$b" ] || { echo "images.sh: $b was not built" >&2; exit 1; }
done

root="$work/sut/rootfs"
mkdir -p "$root/usr/local/bin" "$root/tmp" "$root/etc"
chmod 1777 "$root/tmp"
objcopy --strip-debug "$bin" "$root/usr/local/bin/sut"
objcopy --strip-debug "$harness_bin" "$root/usr/local/bin/harness"
add_with_libs "$root" "$bin" "$harness_bin"
rm -f "$root$bin" "$root$harness_bin"
# The harness's HTTP clients (goose's included) load the system's CA bundle
# when they are built, even for plain-HTTP use: without one they refuse.
if [ -e /etc/ssl/certs/ca-certificates.crt ]; then
  mkdir -p "$root/etc/ssl/certs"
  cp -L /etc/ssl/certs/ca-certificates.crt "$root/etc/ssl/certs/"
fi
# wgpu opens the Vulkan loader at run time (not in ldd); the loader finds
# lavapipe through its ICD file.
gpu=no
for icd in /usr/share/vulkan/icd.d/lvp_icd.*.json; do
  [ -e "$icd" ] || continue
  lib="$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["ICD"]["library_path"])' "$icd")"
  mkdir -p "$root/usr/share/vulkan/icd.d"
  cp "$icd" "$root$icd"
  add_with_libs "$root" "$lib"
  gpu=yes
done
for loader in /usr/lib/x86_64-linux-gnu/libvulkan.so.1 /usr/lib/aarch64-linux-gnu/libvulkan.so.1; do
  add_with_libs "$root" "$loader"
done
cat > "$work/sut/Dockerfile" <<'EOF'
FROM scratch
COPY rootfs/ /
ENV XDG_RUNTIME_DIR=/tmp MESA_SHADER_CACHE_DISABLE=true
EXPOSE 8080
ENTRYPOINT ["/usr/local/bin/sut"]
EOF
docker build -q -t "$sut_tag" "$work/sut" >/dev/null
echo "images.sh: built $sut_tag ($(du -sh "$root" | cut -f1), $profile sut + harness, lavapipe: $gpu)"

# --- redis -------------------------------------------------------------
root="$work/redis/rootfs"
mkdir -p "$root/tmp" "$root/data"
chmod 1777 "$root/tmp"
add_with_libs "$root" "$(command -v redis-server)"
redis_bin="$(command -v redis-server)"
cat > "$work/redis/Dockerfile" <<EOF
FROM scratch
COPY rootfs/ /
WORKDIR /data
EXPOSE 6379
ENTRYPOINT ["$redis_bin"]
EOF
docker build -q -t "$redis_tag" "$work/redis" >/dev/null
echo "images.sh: built $redis_tag ($(du -sh "$root" | cut -f1), $("$redis_bin" --version | cut -d' ' -f3))"
