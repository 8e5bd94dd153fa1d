/* Two threads write different bit-fields of the same struct. Adjacent
 * bit-fields are one memory location (C11 3.14): writing one is a
 * read-modify-write of the bytes that hold both, so the writes race. */
#include <pthread.h>
#include <stdio.h>

static struct { unsigned lo : 4; unsigned hi : 4; } f;

static void *set_lo(void *arg) {
    f.lo = 5; // RACE
    return arg;
}

int main(void) {
    pthread_t t;
    pthread_create(&t, NULL, set_lo, NULL);
    f.hi = 9; // RACE
    pthread_join(t, NULL);
    printf("%u %u\n", f.lo, f.hi);
    return 0;
}
