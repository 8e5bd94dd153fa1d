/* __sanitizer_unaligned_store64 racing with __sanitizer_unaligned_load32:
 * an unaligned 64-bit store at byte 3 (bytes 3..10) and an unaligned 32-bit load at byte 10 (bytes 10..13) share byte 10, and nothing orders the two threads: a race. */
#include <pthread.h>
#include <sanitizer/common_interface_defs.h>
#include <stdint.h>
#include <stdio.h>

static _Alignas(8) unsigned char buf[32];

static void *writer(void *arg) {
    __sanitizer_unaligned_store64(buf + 3, 0x7777777777777777ull); // RACE
    return arg;
}

int main(void) {
    pthread_t t;
    pthread_create(&t, NULL, writer, NULL);
    uint64_t v = __sanitizer_unaligned_load32(buf + 10); // RACE
    pthread_join(t, NULL);
    printf("%llx\n", (unsigned long long)v);
    return 0;
}
