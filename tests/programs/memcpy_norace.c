/* Twin of memcpy_race.c: main reads the buffer only after joining the thread
 * that filled it with memcpy: ordered, no race. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

/* The size is read from a volatile so that the compiler cannot expand the
 * call inline into plain loads and stores: the access happens inside libc. */
static volatile size_t len = 32;
static char src[64] = "the quick brown fox jumps over the lazy dog";
static char dst[64];

static void *worker(void *arg) {
    memcpy(dst, src, len);
    return arg;
}

int main(void) {
    pthread_t t;
    pthread_create(&t, NULL, worker, NULL);
    pthread_join(t, NULL);
    char c = dst[5];
    printf("%d %.10s\n", c, dst);
    return 0;
}
