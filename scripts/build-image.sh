#!/bin/bash
# Builds the yardstick container image with podman (or docker).
#
#   scripts/build-image.sh -t NAME[:TAG]                  # from source, with the Containerfile
#   scripts/build-image.sh -t NAME[:TAG] --push           # ... and push it
#   scripts/build-image.sh -t NAME[:TAG] --binary PATH    # from a built binary, offline
#
# --binary needs no registry and no network: it packs the binary, the shared libraries it links
# (as ldd lists them), the host's CA certificates and a non-root user into an image FROM scratch.
# --check runs `yardstick --version` in the built image with no network.
# Environment: ENGINE=podman|docker (default: podman if present); RUN_FLAGS for `run` (e.g.
# a runtime or ulimits a sandboxed host needs).
set -euo pipefail
cd "$(dirname "$0")/.."
tag="" binary="" push=0 check=0
while [ $# -gt 0 ]; do
  case "$1" in
    -t|--tag) tag="$2"; shift 2 ;;
    --binary) binary="$2"; shift 2 ;;
    --push) push=1; shift ;;
    --check) check=1; shift ;;
    -h|--help) sed -n '2,13p' "$0"; exit 0 ;;
    *) echo "build-image.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
[ -n "$tag" ] || { echo "build-image.sh: name the image with -t NAME[:TAG]" >&2; exit 2; }
ENGINE=${ENGINE:-$(command -v podman >/dev/null && echo podman || echo docker)}

if [ -z "$binary" ]; then
  "$ENGINE" build -t "$tag" -f Containerfile .
else
  [ -x "$binary" ] || { echo "build-image.sh: $binary is not an executable" >&2; exit 2; }
  ctx=$(mktemp -d)
  trap 'rm -rf "$ctx"' EXIT
  mkdir -p "$ctx/root/usr/local/bin" "$ctx/root/etc/ssl/certs" "$ctx/root/home/yardstick" "$ctx/root/tmp"
  cp "$binary" "$ctx/root/usr/local/bin/yardstick"
  strip "$ctx/root/usr/local/bin/yardstick" 2>/dev/null || true
  # The shared libraries and the dynamic loader, at the paths the binary asks for.
  ldd "$binary" | grep -oE '/[^ ]+' | sort -u | while read -r lib; do
    mkdir -p "$ctx/root$(dirname "$lib")"
    cp -L "$lib" "$ctx/root$lib"
  done
  for ca in /etc/ssl/certs/ca-certificates.crt /etc/pki/tls/certs/ca-bundle.crt; do
    [ -f "$ca" ] && { cp -L "$ca" "$ctx/root/etc/ssl/certs/ca-certificates.crt"; break; }
  done
  printf 'root:x:0:0:root:/root:/sbin/nologin\nyardstick:x:10001:10001:yardstick:/home/yardstick:/sbin/nologin\n' > "$ctx/root/etc/passwd"
  printf 'root:x:0:\nyardstick:x:10001:\n' > "$ctx/root/etc/group"
  cat > "$ctx/Containerfile" <<'CF'
FROM scratch
COPY root/ /
USER 10001:10001
WORKDIR /home/yardstick
ENV YARDSTICK_STORE=/home/yardstick/yardstick-store HOME=/home/yardstick
ENTRYPOINT ["/usr/local/bin/yardstick"]
CMD ["--help"]
CF
  chown -R 10001:10001 "$ctx/root/home/yardstick" 2>/dev/null || true
  chmod 1777 "$ctx/root/tmp"
  "$ENGINE" build -t "$tag" -f "$ctx/Containerfile" "$ctx"
fi
echo "built $tag ($("$ENGINE" image inspect "$tag" --format '{{.Size}}' 2>/dev/null | awk '{printf "%.1f MB", $1/1e6}'))"
if [ "$check" = 1 ]; then
  # shellcheck disable=SC2086
  "$ENGINE" run --rm --network none ${RUN_FLAGS:-} "$tag" --version
fi
if [ "$push" = 1 ]; then
  "$ENGINE" push "$tag"
fi
