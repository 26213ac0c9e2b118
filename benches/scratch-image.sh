# Sourced by the benches that run throng's own targets as containers: `scratch_image BIN DIR
# IMAGE ENTRYPOINT...` builds IMAGE FROM scratch holding BIN stripped (as a deployed binary would
# be: the image size is part of a comparison) and the shared libraries it needs, with an empty
# /tmp, in the build context DIR.
scratch_image() {
  local bin=$1 dir=$2 image=$3
  shift 3
  mkdir -p "$dir/rootfs/tmp"
  strip -o "$dir/rootfs/throng" "$bin"
  for lib in $(ldd "$bin" | grep -o '/[^ ]*'); do
    mkdir -p "$dir/rootfs$(dirname "$lib")"
    cp -L "$lib" "$dir/rootfs$lib"
  done
  local entry
  entry=$(printf '"%s", ' "/throng" "$@")
  printf 'FROM scratch\nCOPY rootfs/ /\nENTRYPOINT [%s]\n' "${entry%, }" > "$dir/Dockerfile"
  docker build -q -t "$image" "$dir" >/dev/null
}
