/* An unaligned 8-byte write (a packed field at offset 1, covering bytes 1..8,
 * so it straddles two 8-byte cells) against a 1-byte read of byte 8 in the
 * second cell: they share byte 8, unordered: a race. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>

struct __attribute__((packed)) packed { char tag; uint64_t v; };
static volatile union { struct packed p; unsigned char bytes[16]; } __attribute__((aligned(8))) u;

static void *write_field(void *arg) {
    u.p.v = 0x0102030405060708ull; // RACE
    return arg;
}

int main(void) {
    pthread_t t;
    pthread_create(&t, NULL, write_field, NULL);
    unsigned char b = u.bytes[8]; // RACE
    pthread_join(t, NULL);
    printf("%u\n", b);
    return 0;
}
