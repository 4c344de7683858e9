# MGPU_CHECK_CUDA: find the CUDA toolkit (--with-cuda=DIR, default
# /usr/local/cuda): cuda.h, cudaTypedefs.h, nvcc, and the driver stub library
# whose exported names the libcuda.so.1 shim must all export too.
AC_DEFUN([MGPU_CHECK_CUDA], [
  AC_ARG_WITH([cuda],
    [AS_HELP_STRING([--with-cuda=DIR], [CUDA toolkit directory @<:@/usr/local/cuda@:>@])],
    [CUDA_HOME=$withval], [CUDA_HOME=/usr/local/cuda])
  AS_IF([test "x$CUDA_HOME" = xno], [AC_MSG_ERROR([mgpu needs the CUDA toolkit; do not pass --without-cuda])])
  AC_MSG_CHECKING([for the CUDA toolkit in $CUDA_HOME])
  AS_IF([test -f "$CUDA_HOME/include/cuda.h" && test -f "$CUDA_HOME/include/cudaTypedefs.h"],
    [AC_MSG_RESULT([yes])],
    [AC_MSG_RESULT([no])
     AC_MSG_ERROR([CUDA toolkit headers not found in $CUDA_HOME; install the CUDA toolkit (NVIDIA's cuda-toolkit package on Debian/Ubuntu and RHEL/Fedora, or Debian's nvidia-cuda-toolkit) and pass --with-cuda=DIR])])
  CUDA_CPPFLAGS="-I$CUDA_HOME/include"
  AC_MSG_CHECKING([for the CUDA driver stub library])
  CUDA_STUB_LIBCUDA=
  for d in "$CUDA_HOME/lib64/stubs" "$CUDA_HOME/lib/stubs" "$CUDA_HOME/targets/x86_64-linux/lib/stubs"; do
    AS_IF([test -f "$d/libcuda.so"], [CUDA_STUB_LIBCUDA="$d/libcuda.so"; CUDA_STUB_DIR="$d"; break])
  done
  AS_IF([test -n "$CUDA_STUB_LIBCUDA"], [AC_MSG_RESULT([$CUDA_STUB_LIBCUDA])],
    [AC_MSG_RESULT([no])
     AC_MSG_ERROR([the CUDA toolkit in $CUDA_HOME has no lib64/stubs/libcuda.so; install the full toolkit (NVIDIA's cuda-toolkit package, or Debian's nvidia-cuda-toolkit)])])
  AC_PATH_PROG([NVCC], [nvcc], [], [$CUDA_HOME/bin$PATH_SEPARATOR$PATH])
  AS_IF([test -z "$NVCC"], [AC_MSG_ERROR([nvcc not found in $CUDA_HOME/bin; install the CUDA toolkit (NVIDIA's cuda-toolkit package, or Debian's nvidia-cuda-toolkit)])])
  CUDA_LIBDIR=
  for d in "$CUDA_HOME/lib64" "$CUDA_HOME/lib" "$CUDA_HOME/targets/x86_64-linux/lib"; do
    AS_IF([test -f "$d/libcudart_static.a" || test -f "$d/libcudart.so"], [CUDA_LIBDIR="$d"; break])
  done
  AS_IF([test -z "$CUDA_LIBDIR"], [AC_MSG_ERROR([the CUDA runtime library is missing from $CUDA_HOME; install the full toolkit])])
  dnl cuBLAS: its header for the GEMM entry points mgpu interposes (blas/),
  dnl its shared library for the GPU test that calls it.
  AC_MSG_CHECKING([for cublas_v2.h])
  AS_IF([test -f "$CUDA_HOME/include/cublas_v2.h"], [AC_MSG_RESULT([yes])],
    [AC_MSG_RESULT([no])
     AC_MSG_ERROR([cublas_v2.h not found in $CUDA_HOME/include; install cuBLAS with the toolkit (NVIDIA's libcublas-dev-13-0 on Debian/Ubuntu, libcublas-devel-13-0 on RHEL/Fedora, or Debian's libcublas-dev)])])
  AC_MSG_CHECKING([for the shared cuBLAS])
  AS_IF([test -f "$CUDA_LIBDIR/libcublas.so"], [have_cublas=yes], [have_cublas=no])
  AC_MSG_RESULT([$have_cublas])
  AM_CONDITIONAL([HAVE_CUBLAS], [test "x$have_cublas" = xyes])
  dnl The static cuBLAS, where the toolkit has it: the GPU test builds the
  dnl GEMM client with cuBLAS inside it, which mgpu cannot intercept and
  dnl must report. Only if a program really links with it.
  AC_MSG_CHECKING([whether a program links with the static cuBLAS])
  CUBLAS_STATIC_LIBS="-L$CUDA_LIBDIR -lcublas_static -lcublasLt_static -lculibos -lcudart_static -L$CUDA_STUB_DIR -lcuda -lstdc++ -lpthread -ldl -lrt -lm"
  have_cublas_static=no
  AS_IF([test -f "$CUDA_LIBDIR/libcublas_static.a"], [
    save_CPPFLAGS=$CPPFLAGS; save_LIBS=$LIBS
    CPPFLAGS="$CPPFLAGS $CUDA_CPPFLAGS"; LIBS="$CUBLAS_STATIC_LIBS $LIBS"
    AC_LINK_IFELSE([AC_LANG_PROGRAM([[#include <cublas_v2.h>]],
      [[cublasHandle_t h; return cublasCreate(&h) != CUBLAS_STATUS_SUCCESS;]])],
      [have_cublas_static=yes])
    CPPFLAGS=$save_CPPFLAGS; LIBS=$save_LIBS])
  AC_MSG_RESULT([$have_cublas_static])
  AC_SUBST([CUBLAS_STATIC_LIBS])
  AM_CONDITIONAL([HAVE_CUBLAS_STATIC], [test "x$have_cublas_static" = xyes])
  save_CPPFLAGS=$CPPFLAGS; CPPFLAGS="$CPPFLAGS $CUDA_CPPFLAGS"
  AC_MSG_CHECKING([that cuda.h is CUDA 12.3 or newer])
  AC_COMPILE_IFELSE([AC_LANG_PROGRAM([[#include <cuda.h>
#if CUDA_VERSION < 12030
#error too old
#endif]], [])], [AC_MSG_RESULT([yes])],
    [AC_MSG_RESULT([no]); AC_MSG_ERROR([mgpu needs CUDA 12.3 or newer (cuFuncGetName, cuKernelGetName); install a newer toolkit])])
  CPPFLAGS=$save_CPPFLAGS
  NVCC_ARCH_FLAGS=${NVCC_ARCH_FLAGS:-"-gencode arch=compute_90,code=sm_90 -gencode arch=compute_90,code=compute_90"}
  AC_ARG_VAR([NVCC_ARCH_FLAGS], [nvcc -gencode flags for tests, examples and benchmarks (default sm_90 and compute_90 PTX)])
  AC_SUBST([CUDA_HOME])
  AC_SUBST([CUDA_CPPFLAGS])
  AC_SUBST([CUDA_STUB_LIBCUDA])
  AC_SUBST([CUDA_STUB_DIR])
  AC_SUBST([CUDA_LIBDIR])
])
