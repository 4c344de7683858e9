# MGPU_CHECK_CPU_BLAS: a CPU BLAS with CBLAS (cblas.h and cblas_sgemm, in
# libblas or libopenblas) for the test program of mgpu-run --blas. Optional:
# without it that test is skipped, and configure says so.
AC_DEFUN([MGPU_CHECK_CPU_BLAS], [
  CPU_BLAS_LIBS=
  save_LIBS=$LIBS
  AC_CHECK_HEADER([cblas.h], [
    AC_SEARCH_LIBS([cblas_sgemm], [blas openblas], [
      AS_IF([test "x$ac_cv_search_cblas_sgemm" != "xnone required"],
        [CPU_BLAS_LIBS=$ac_cv_search_cblas_sgemm])
      AC_CHECK_FUNC([sgemm_], [mgpu_have_cpu_blas=yes], [mgpu_have_cpu_blas=no])
    ], [mgpu_have_cpu_blas=no])
  ], [mgpu_have_cpu_blas=no])
  LIBS=$save_LIBS
  AS_IF([test "x$mgpu_have_cpu_blas" != xyes],
    [mgpu_have_cpu_blas="no (the --blas test needs a CPU BLAS: Debian/Ubuntu package libblas-dev or libopenblas-dev, RHEL/Fedora blas-devel or openblas-devel)"])
  AC_SUBST([CPU_BLAS_LIBS])
  AM_CONDITIONAL([HAVE_CPU_BLAS], [test "x$mgpu_have_cpu_blas" = xyes])
])
