/* Overlapping accesses that start at different addresses: a thread writes 2
 * bytes at offset 2 of an 8-byte word while main reads all 8 bytes from
 * offset 0. Bytes 2..3 are touched by both, unordered: a race. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>

static volatile union { uint64_t whole; uint16_t half[4]; uint32_t word[2]; } u;

static void *write_half(void *arg) {
    u.half[1] = 0xbeef; // RACE
    return arg;
}

int main(void) {
    pthread_t t;
    pthread_create(&t, NULL, write_half, NULL);
    uint64_t v = u.whole; // RACE
    pthread_join(t, NULL);
    printf("%llx\n", (unsigned long long)v);
    return 0;
}
