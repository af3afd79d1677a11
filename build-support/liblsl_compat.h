/* Force-included into liblsl's C++ sources (see .cargo/config.toml): what its bundled, older
   Boost needs from today's compilers and C libraries. */

/* libc++ (zig's C++ library, which the manylinux wheel is built with) drops
   std::unary_function in C++17 unless asked to keep it; Boost's hash still derives from it.
   Defined before any library header is read. libstdc++ ignores it. */
#define _LIBCPP_ENABLE_CXX17_REMOVED_UNARY_BINARY_FUNCTION 1

/* Boost tests `#if PTHREAD_STACK_MIN > 0`; glibc 2.34+ makes PTHREAD_STACK_MIN a call to
   sysconf, which the preprocessor cannot evaluate. This gives it the constant it expects. */
#include <limits.h>
#undef PTHREAD_STACK_MIN
#define PTHREAD_STACK_MIN 16384
