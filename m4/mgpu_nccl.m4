# MGPU_CHECK_NCCL: find NCCL's header and library (--with-nccl=DIR), looking in
# the CUDA toolkit's own copy first, then in the system directories.
AC_DEFUN([MGPU_CHECK_NCCL], [
  AC_ARG_WITH([nccl],
    [AS_HELP_STRING([--with-nccl=DIR], [NCCL installation @<:@the CUDA toolkit's copy, else the system's@:>@])],
    [nccl_dirs=$withval], [nccl_dirs="$CUDA_HOME"])
  NCCL_CPPFLAGS=; NCCL_LIBS=
  AC_MSG_CHECKING([for NCCL])
  nccl_found=no
  for d in $nccl_dirs; do
    for l in "$d/lib64" "$d/lib"; do
      AS_IF([test -f "$d/include/nccl.h" && test -f "$l/libnccl.so"],
        [NCCL_CPPFLAGS="-I$d/include"; NCCL_LIBS="-L$l -lnccl"; nccl_found=$d; break 2])
    done
  done
  AS_IF([test "x$nccl_found" = xno], [
    save_CPPFLAGS=$CPPFLAGS; save_LIBS=$LIBS
    CPPFLAGS="$CPPFLAGS $CUDA_CPPFLAGS"
    AC_LINK_IFELSE([AC_LANG_PROGRAM([[#include <nccl.h>]], [[int v; return ncclGetVersion(&v);]])],
      [nccl_found=system; NCCL_LIBS="-lnccl"], [])
    LIBS="$save_LIBS -lnccl"
    AS_IF([test "x$nccl_found" = xno],
      [AC_LINK_IFELSE([AC_LANG_PROGRAM([[#include <nccl.h>]], [[int v; return ncclGetVersion(&v);]])],
        [nccl_found=system; NCCL_LIBS="-lnccl"], [])])
    CPPFLAGS=$save_CPPFLAGS; LIBS=$save_LIBS])
  AC_MSG_RESULT([$nccl_found])
  AS_IF([test "x$nccl_found" = xno],
    [AC_MSG_ERROR([NCCL not found; install it (Debian package libnccl-dev) or pass --with-nccl=DIR])])
  AC_SUBST([NCCL_CPPFLAGS])
  AC_SUBST([NCCL_LIBS])
])
