/* A thread writes a block that main frees, without synchronization: the
 * write and the free race in every schedule. The writer sleeps first so that
 * in practice its write lands after the free, on freed memory, where glibc
 * keeps its free-list link: with a second freed block of the same size behind
 * it in the list, main's next two mallocs follow the scribbled link, and
 * glibc aborts ("unaligned tcache chunk") or the program crashes. That is
 * what happens without a quarantine that delays reuse of freed memory; under
 * TSan (which has one) the program runs to the end and exits normally. The
 * sleep orders nothing. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void *volatile escape; /* keeps the compiler from eliding malloc/free pairs */

static void *scribbler(void *arg) {
    long *p = arg;
    usleep(20000);
    p[0] = 0x4141414141414141; // RACE
    p[1] = 0x4242424242424242; // RACE
    return NULL;
}

int main(void) {
    long *p = malloc(4 * sizeof *p);
    long *spare = malloc(4 * sizeof *spare);
    escape = spare;
    memset(p, 0, 4 * sizeof *p);
    pthread_t t;
    pthread_create(&t, NULL, scribbler, p);
    free(spare);
    free(p); // RACE
    pthread_join(t, NULL);
    long *q = malloc(4 * sizeof *q); /* p again */
    long *r = malloc(4 * sizeof *r); /* follows p's scribbled link */
    escape = r;
    q[0] = 1;
    r[0] = 2;
    printf("%p %p %ld\n", (void *)q, (void *)r, q[0] + r[0]);
    free(q);
    free(r);
    return 0;
}
