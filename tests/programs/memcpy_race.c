/* A thread fills a buffer with memcpy while main reads one byte of it with a
 * plain load, before joining: the write inside memcpy and the read are
 * unordered, a race. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

/* The size is read from a volatile so that the compiler cannot expand the
 * call inline into plain loads and stores: the access happens inside libc. */
static volatile size_t len = 32;
static char src[64] = "the quick brown fox jumps over the lazy dog";
static char dst[64];

static void *worker(void *arg) {
    memcpy(dst, src, len); // RACE
    return arg;
}

int main(void) {
    pthread_t t;
    pthread_create(&t, NULL, worker, NULL);
    char c = dst[5]; // RACE
    pthread_join(t, NULL);
    printf("%d %.10s\n", c, dst);
    return 0;
}
