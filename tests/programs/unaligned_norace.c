/* __sanitizer_unaligned_load/store 16/32/64 at odd addresses by two threads
 * on byte ranges that are adjacent but do not overlap (thread A: bytes 1..8
 * and 17..18; thread B: bytes 9..10, 11..14 and 19..26), several of them in
 * a shared 8-byte word: no race. The first store's bytes are then read back
 * after the join. */
#include <pthread.h>
#include <sanitizer/common_interface_defs.h>
#include <stdint.h>
#include <stdio.h>

static _Alignas(8) unsigned char buf[32];
static uint64_t got;

static void *a(void *arg) {
    __sanitizer_unaligned_store64(buf + 1, 0x1111111111111111ull);
    __sanitizer_unaligned_store16(buf + 17, 0x2222);
    return arg;
}

static void *b(void *arg) {
    __sanitizer_unaligned_store16(buf + 9, 0x3333);
    __sanitizer_unaligned_store32(buf + 11, 0x44444444u);
    __sanitizer_unaligned_store64(buf + 19, 0x5555555555555555ull);
    got = __sanitizer_unaligned_load32(buf + 11) + __sanitizer_unaligned_load16(buf + 9);
    return arg;
}

int main(void) {
    pthread_t ta, tb;
    pthread_create(&ta, NULL, a, NULL);
    pthread_create(&tb, NULL, b, NULL);
    pthread_join(ta, NULL);
    pthread_join(tb, NULL);
    got += __sanitizer_unaligned_load64(buf + 1);
    printf("%llx\n", (unsigned long long)got);
    return 0;
}
