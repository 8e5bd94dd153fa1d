/* Twin of overlap_race.c whose accesses do not overlap: the thread writes
 * bytes 2..3 of the word, main reads bytes 4..7 (they share one 8-byte word
 * but no byte): no race. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>

static volatile union { uint64_t whole; uint16_t half[4]; uint32_t word[2]; } u;

static void *write_half(void *arg) {
    u.half[1] = 0xbeef;
    return arg;
}

int main(void) {
    pthread_t t;
    pthread_create(&t, NULL, write_half, NULL);
    uint32_t v = u.word[1];
    pthread_join(t, NULL);
    printf("%x\n", (unsigned)v);
    return 0;
}
