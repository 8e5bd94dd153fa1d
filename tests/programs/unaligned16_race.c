/* __sanitizer_unaligned_store16 racing with __sanitizer_unaligned_load64:
 * an unaligned 16-bit store at byte 7 (bytes 7..8) and an unaligned 64-bit load at byte 8 (bytes 8..15) share byte 8, and nothing orders the two threads: a race. */
#include <pthread.h>
#include <sanitizer/common_interface_defs.h>
#include <stdint.h>
#include <stdio.h>

static _Alignas(8) unsigned char buf[32];

static void *writer(void *arg) {
    __sanitizer_unaligned_store16(buf + 7, 0x7777); // RACE
    return arg;
}

int main(void) {
    pthread_t t;
    pthread_create(&t, NULL, writer, NULL);
    uint64_t v = __sanitizer_unaligned_load64(buf + 8); // RACE
    pthread_join(t, NULL);
    printf("%llx\n", (unsigned long long)v);
    return 0;
}
