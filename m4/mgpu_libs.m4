# MGPU_CHECK_LIB(VAR, PKG, HEADER, LIB, FUNCTION, DEBIAN-PACKAGE, RHEL-PACKAGE):
# find a library through pkg-config, or by its header and library where
# pkg-config or its .pc file is missing; stop configure naming the package
# on Debian or Ubuntu and on RHEL-like systems otherwise.
AC_DEFUN([MGPU_CHECK_LIB], [
  PKG_PROG_PKG_CONFIG
  mgpu_found=no
  AS_IF([test -n "$PKG_CONFIG"],
    [PKG_CHECK_MODULES([$1], [$2], [mgpu_found=yes], [mgpu_found=no])])
  AS_IF([test "x$mgpu_found" = xno], [
    save_LIBS=$LIBS
    AC_CHECK_HEADER([$3], [
      AC_CHECK_LIB([$4], [$5], [mgpu_found=yes; $1_CFLAGS=; $1_LIBS="-l$4"])], [])
    LIBS=$save_LIBS])
  AS_IF([test "x$mgpu_found" = xno],
    [AC_MSG_ERROR([$2 not found; install it (Debian/Ubuntu package $6, RHEL/Fedora $7)])])
  AC_SUBST([$1_CFLAGS])
  AC_SUBST([$1_LIBS])
])
