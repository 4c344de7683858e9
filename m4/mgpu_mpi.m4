# MGPU_CHECK_MPI: MPI is used where it is found (--with-mpi=check, the
# default): mpicc must link an MPI program; its flags (MPI_CFLAGS,
# MPI_LIBS, from Open MPI's --showme or MPICH's -compile_info/-link_info)
# build examples/mpi_jacobi. --with-mpi asks for it (an error without it),
# --without-mpi leaves it out.
AC_DEFUN([MGPU_CHECK_MPI], [
  AC_ARG_WITH([mpi],
    [AS_HELP_STRING([--with-mpi@<:@=MPICC@:>@], [build the MPI example (examples/mpi_jacobi) @<:@check: where mpicc is found@:>@])],
    [], [with_mpi=check])
  MPICC=
  MPI_CFLAGS=
  MPI_LIBS=
  mpi_why=
  AS_IF([test "x$with_mpi" != xno], [
    AS_CASE([$with_mpi], [yes|check], [AC_PATH_PROGS([MPICC], [mpicc])], [MPICC=$with_mpi])
    AS_IF([test -z "$MPICC" || ! test -x "$MPICC"], [mpi_why="mpicc not found"], [
      AC_MSG_CHECKING([that $MPICC links an MPI program])
      cat > conftest_mpi.c <<MPIEOF
#include <mpi.h>
int main(int argc, char **argv) { MPI_Init(&argc, &argv); MPI_Finalize(); return 0; }
MPIEOF
      AS_IF([$MPICC conftest_mpi.c -o conftest_mpi >&AS_MESSAGE_LOG_FD 2>&1],
        [AC_MSG_RESULT([yes])], [AC_MSG_RESULT([no]); mpi_why="$MPICC cannot link an MPI program"])
      rm -f conftest_mpi conftest_mpi.c])
    AS_IF([test -z "$mpi_why"], [
      AS_IF([MPI_CFLAGS=`$MPICC --showme:compile 2>/dev/null` && MPI_LIBS=`$MPICC --showme:link 2>/dev/null`], [],
        [MPI_CFLAGS=`$MPICC -compile_info 2>/dev/null | cut -d' ' -f2-`
         MPI_LIBS=`$MPICC -link_info 2>/dev/null | cut -d' ' -f2-`])])
    AS_IF([test -n "$mpi_why" && test "x$with_mpi" != xcheck],
      [AC_MSG_ERROR([--with-mpi was given but $mpi_why; install MPI (Debian/Ubuntu package libopenmpi-dev, RHEL/Fedora openmpi-devel) or pass --with-mpi=/path/to/mpicc])])
    AS_IF([test -n "$mpi_why"], [with_mpi="no ($mpi_why; Debian/Ubuntu package libopenmpi-dev, RHEL/Fedora openmpi-devel)"], [with_mpi=yes])])
  AS_IF([test "x$with_mpi" = xyes], [AC_DEFINE([HAVE_MPI], [1], [Define when MPI support is built])])
  AC_SUBST([MPICC])
  AC_SUBST([MPI_CFLAGS])
  AC_SUBST([MPI_LIBS])
  AM_CONDITIONAL([HAVE_MPI], [test "x$with_mpi" = xyes])
])
