/* liblsl's bundled boost tests `#if PTHREAD_STACK_MIN > 0`; glibc 2.34+ makes PTHREAD_STACK_MIN a
   call to sysconf, which the preprocessor cannot evaluate. Force-included into liblsl's C++
   sources (see .cargo/config.toml), this gives it the constant it expects. */
#include <limits.h>
#undef PTHREAD_STACK_MIN
#define PTHREAD_STACK_MIN 16384
