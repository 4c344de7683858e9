dnl MGPU_CHECK_FUZZER: FUZZ_CC, a compiler that builds libFuzzer harnesses
dnl (clang with -fsanitize=fuzzer), for `make fuzz`; empty when there is
dnl none, and `make fuzz` then names the package to install. Optional: the
dnl rest of the build never needs it.
AC_DEFUN([MGPU_CHECK_FUZZER], [
  AC_ARG_VAR([FUZZ_CC], [clang with libFuzzer, for make fuzz (default: clang)])
  AC_CHECK_PROGS([FUZZ_CC], [clang])
  AS_IF([test -n "$FUZZ_CC"], [
    AC_MSG_CHECKING([whether $FUZZ_CC links libFuzzer harnesses])
    cat > conftest_fuzz.c <<_MGPU_EOF
#include <stddef.h>
#include <stdint.h>
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) { (void)data; (void)size; return 0; }
_MGPU_EOF
    AS_IF([$FUZZ_CC -fsanitize=fuzzer,address,undefined conftest_fuzz.c -o conftest_fuzz >&AS_MESSAGE_LOG_FD 2>&1],
      [AC_MSG_RESULT([yes])],
      [AC_MSG_RESULT([no]); FUZZ_CC=])
    rm -f conftest_fuzz.c conftest_fuzz])
])
