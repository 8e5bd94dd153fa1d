/* A thread writes a block that main frees, without synchronization: the
 * write and the free race in every schedule. The writer sleeps first so that
 * in practice its write lands after the free, on freed memory: it overwrites
 * the allocator's free-list link. Without a quarantine that delays reuse of
 * freed memory, the mallocs main does afterwards hand out a garbage pointer
 * and glibc aborts or the program crashes; under TSan (which has one) the
 * program runs to the end and exits normally. The sleep orders nothing. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void *scribbler(void *arg) {
    long *p = arg;
    usleep(20000);
    p[0] = 0x4141414141414141; // RACE
    p[1] = 0x4242424242424242; // RACE
    return NULL;
}

int main(void) {
    long *p = malloc(4 * sizeof *p);
    memset(p, 0, 4 * sizeof *p);
    pthread_t t;
    pthread_create(&t, NULL, scribbler, p);
    free(p); // RACE
    pthread_join(t, NULL);
    long total = 0;
    for (int i = 0; i < 4; i++) {
        long *q = malloc(4 * sizeof *q);
        q[0] = i;
        total += q[0];
        free(q);
    }
    long *r[3];
    for (int i = 0; i < 3; i++) { r[i] = malloc(4 * sizeof *r[i]); r[i][3] = i; total += r[i][3]; }
    for (int i = 0; i < 3; i++) free(r[i]);
    printf("%ld\n", total);
    return 0;
}
