/* The small shared library of supp_main.c, built without instrumentation
 * (as a third-party library is): its memset reaches ThreadSanitizer's and
 * cprace's interceptors with this library as the caller. */
#include <string.h>

void lib_clear(int *p, unsigned long n) {
    memset(p, 0, n * sizeof *p); /* RACE (through the library) */
}
