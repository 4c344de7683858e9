# Sourced by the bench/run-*.sh scripts: MGPU_RUN is the mgpu-run to use,
# the build tree's (with its libraries) when run from the top build
# directory, else the installed one, unless the caller set it.
if [ -z "${MGPU_RUN:-}" ]; then
  if [ -x src/mgpu-run ]; then
    MGPU_RUN=src/mgpu-run
    export MGPU_LIBDIR="$(pwd)/src/.libs"
  else
    MGPU_RUN=mgpu-run
  fi
fi
