/* A thread copies with strncpy, which also pads the destination with NULs up
 * to len bytes, while main reads byte 20 (written only by the padding):
 * unordered, a race. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

/* The size is read from a volatile so that the compiler cannot expand the
 * call inline into plain loads and stores: the access happens inside libc. */
static volatile size_t len = 32;
static char src[64] = "short";
static char dst[64] = "XXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXX";

static void *worker(void *arg) {
    strncpy(dst, src, len); // RACE
    return arg;
}

int main(void) {
    pthread_t t;
    pthread_create(&t, NULL, worker, NULL);
    char c = dst[20]; // RACE
    pthread_join(t, NULL);
    printf("%d %s\n", c, dst);
    return 0;
}
