dnl MGPU_CHECK_TSAN: whether $CC builds and runs threaded programs with
dnl ThreadSanitizer, for the race test of `make check` (a ThreadSanitizer
dnl copy of the runtime and the shim, and the stress client, against the
dnl fake GPU). Sets TSAN_CFLAGS and the conditional HAVE_TSAN; with
dnl --disable-tsan, or where the check fails, the test is skipped.
dnl The test program is run, not only linked: on kernels with more address
dnl randomisation than the sanitizer's runtime expects (vm.mmap_rnd_bits
dnl above 28 with older GCC), every ThreadSanitizer program dies at start.
AC_DEFUN([MGPU_CHECK_TSAN], [
  AC_ARG_ENABLE([tsan],
    [AS_HELP_STRING([--disable-tsan], [do not build the ThreadSanitizer copy of the runtime that make check runs the stress client against])],
    [], [enable_tsan=auto])
  TSAN_CFLAGS="-fsanitize=thread -g -O1"
  mgpu_have_tsan=no
  AS_IF([test "x$enable_tsan" != xno], [
    AC_MSG_CHECKING([whether $CC builds and runs threaded programs with -fsanitize=thread])
    save_CFLAGS=$CFLAGS; save_LDFLAGS=$LDFLAGS
    CFLAGS="$CFLAGS $TSAN_CFLAGS"; LDFLAGS="$LDFLAGS -fsanitize=thread"
    AC_RUN_IFELSE([AC_LANG_PROGRAM([[#include <pthread.h>
static int shared;
static void *work(void *arg) { __atomic_add_fetch(&shared, 1, __ATOMIC_RELAXED); return arg; }]],
      [[pthread_t t;
        if (pthread_create(&t, 0, work, 0) != 0) return 1;
        __atomic_add_fetch(&shared, 1, __ATOMIC_RELAXED);
        return pthread_join(t, 0) != 0 || shared != 2;]])],
      [mgpu_have_tsan=yes], [], [mgpu_have_tsan="no (cross-compiling)"])
    CFLAGS=$save_CFLAGS; LDFLAGS=$save_LDFLAGS
    AC_MSG_RESULT([$mgpu_have_tsan])
    AS_IF([test "x$enable_tsan" = xyes && test "x$mgpu_have_tsan" != xyes],
      [AC_MSG_ERROR([--enable-tsan: $CC cannot build and run programs with -fsanitize=thread (gcc's libtsan: Debian/Ubuntu package libtsan2, RHEL/Fedora libtsan; see config.log)])])])
  AS_IF([test "x$mgpu_have_tsan" = xyes], [HAVE_TSAN=yes], [HAVE_TSAN=no])
  AC_SUBST([TSAN_CFLAGS])
  AC_SUBST([HAVE_TSAN])
  AM_CONDITIONAL([HAVE_TSAN], [test "x$HAVE_TSAN" = xyes])
])
