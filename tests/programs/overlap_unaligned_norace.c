/* Twin of overlap_unaligned_race.c: the unaligned 8-byte write covers bytes
 * 1..8, main reads byte 9, in the same 8-byte cell as byte 8 but not written
 * by the thread: no race. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>

struct __attribute__((packed)) packed { char tag; uint64_t v; };
static volatile union { struct packed p; unsigned char bytes[16]; } __attribute__((aligned(8))) u;

static void *write_field(void *arg) {
    u.p.v = 0x0102030405060708ull;
    return arg;
}

int main(void) {
    pthread_t t;
    pthread_create(&t, NULL, write_field, NULL);
    unsigned char b = u.bytes[9];
    pthread_join(t, NULL);
    printf("%u\n", b);
    return 0;
}
