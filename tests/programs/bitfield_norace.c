/* Twin of bitfield_race.c: a zero-width bit-field puts the second field in a
 * separate allocation unit, so the two fields are distinct memory locations
 * and the writes touch different bytes: no race. */
#include <pthread.h>
#include <stdio.h>

static struct { unsigned lo : 4; unsigned : 0; unsigned hi : 4; } f;

static void *set_lo(void *arg) {
    f.lo = 5;
    return arg;
}

int main(void) {
    pthread_t t;
    pthread_create(&t, NULL, set_lo, NULL);
    f.hi = 9;
    pthread_join(t, NULL);
    printf("%u %u\n", f.lo, f.hi);
    return 0;
}
