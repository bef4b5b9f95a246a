#!/usr/bin/env bash
# Builds mecha-test:local, the small image the docker engine tests run in,
# from this machine's own programs: no registry is asked for anything.
#
# Only the few programs the tests call, their shared libraries (and those
# mecha's binary needs, for the allow_hosts bridge) and the dynamic loader
# go in (a few MB, a second or two), each at its canonical
# path, with the host's top-level links (/bin -> usr/bin, /lib64 ->
# usr/lib64 on a merged-/usr system) recreated so every name the binaries
# use resolves. The image carries an ENV of its own and an ENTRYPOINT that
# fails, so the tests also show that neither reaches a job.
#
# Idempotent: an image built from this same script is left as it is.
set -euo pipefail

image=mecha-test:local
stamp=$(sha256sum "$0" | cut -c1-16)
if [ "$(docker image inspect --format '{{index .Config.Labels "mecha.script"}}' "$image" 2>/dev/null)" = "$stamp" ]; then
    exit 0
fi

programs=(bash sh cat ls sleep mv mkdir rm touch id env setsid true false curl)
# What mecha's own binary needs beyond libc, since it runs inside as the
# allow_hosts bridge (every glibc image has them).
libraries=(libgcc_s.so.1 libm.so.6)

root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT

for dir in bin sbin lib lib32 lib64 libx32; do
    if [ -L "/$dir" ]; then
        ln -s "$(readlink "/$dir")" "$root/$dir"
    fi
done

# Copies $1 to its canonical path in the image, and keeps its own name
# (libc.so.6, sh) as a link to that when the name is itself a link.
add() {
    local named=$1 real dir
    real=$(readlink -f "$named")
    mkdir -p "$root$(dirname "$real")"
    [ -e "$root$real" ] || cp "$real" "$root$real"
    dir=$(readlink -f "$(dirname "$named")")
    if [ "$dir/$(basename "$named")" != "$real" ]; then
        mkdir -p "$root$dir"
        ln -sf "$real" "$root$dir/$(basename "$named")"
    fi
}

for name in "${programs[@]}"; do
    path=$(type -P "$name") || { echo "docker-image.sh: $name is not installed" >&2; exit 1; }
    add "$path"
    # Libraries ("libc.so.6 => /lib/.../libc.so.6 (0x...)") and the loader
    # ("/lib64/ld-linux-x86-64.so.2 (0x...)").
    ldd "$path" 2>/dev/null | while read -r first arrow second _; do
        if [ "$arrow" = "=>" ] && [ "${second#/}" != "$second" ]; then
            add "$second"
        elif [ "${first#/}" != "$first" ]; then
            add "$first"
        fi
    done
done
for lib in "${libraries[@]}"; do
    path=$(ldconfig -p | awk -v lib="$lib" '$1 == lib { print $NF; exit }')
    [ -n "$path" ] || { echo "docker-image.sh: $lib is not installed" >&2; exit 1; }
    add "$path"
done
mkdir -p "$root/tmp" "$root/proc" "$root/dev" "$root/etc"
chmod 1777 "$root/tmp"

tar -C "$root" -c . | docker import \
    --change "LABEL mecha.script=$stamp" \
    --change 'ENV PATH=/usr/bin:/bin MECHA_IMAGE_ENV=from-the-image' \
    --change 'ENTRYPOINT ["/usr/bin/false"]' \
    - "$image" >/dev/null
echo "docker-image.sh: built $image"
