# MGPU_CHECK_MPI: MPI is optional (--with-mpi); when asked for, mpicc must be
# found and must link an MPI program.
AC_DEFUN([MGPU_CHECK_MPI], [
  AC_ARG_WITH([mpi],
    [AS_HELP_STRING([--with-mpi@<:@=MPICC@:>@], [launch ranks across nodes with MPI @<:@no@:>@])],
    [], [with_mpi=no])
  MPICC=
  AS_IF([test "x$with_mpi" != xno], [
    AS_IF([test "x$with_mpi" = xyes], [AC_PATH_PROGS([MPICC], [mpicc])], [MPICC=$with_mpi])
    AS_IF([test -z "$MPICC" || ! test -x "$MPICC"],
      [AC_MSG_ERROR([--with-mpi was given but mpicc was not found; install MPI (Debian package libopenmpi-dev) or pass --with-mpi=/path/to/mpicc])])
    AC_MSG_CHECKING([that $MPICC links an MPI program])
    cat > conftest_mpi.c <<MPIEOF
#include <mpi.h>
int main(int argc, char **argv) { MPI_Init(&argc, &argv); MPI_Finalize(); return 0; }
MPIEOF
    AS_IF([$MPICC conftest_mpi.c -o conftest_mpi >&AS_MESSAGE_LOG_FD 2>&1],
      [AC_MSG_RESULT([yes]); rm -f conftest_mpi conftest_mpi.c],
      [AC_MSG_RESULT([no]); rm -f conftest_mpi conftest_mpi.c
       AC_MSG_ERROR([$MPICC cannot link an MPI program; install MPI (Debian package libopenmpi-dev)])])
    AC_DEFINE([HAVE_MPI], [1], [Define when MPI support is built])])
  AC_SUBST([MPICC])
  AM_CONDITIONAL([HAVE_MPI], [test "x$with_mpi" != xno])
])
