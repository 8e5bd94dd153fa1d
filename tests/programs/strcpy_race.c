/* A thread copies a string with strcpy while main reads a byte of the
 * destination: unordered, a race. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

/* The size is read from a volatile so that the compiler cannot expand the
 * call inline into plain loads and stores: the access happens inside libc. */
static volatile size_t len = 32;
static char src[64] = "copy me, if you can";
static char dst[64];

static void *worker(void *arg) {
    (void)len;
    strcpy(dst, src); // RACE
    return arg;
}

int main(void) {
    pthread_t t;
    pthread_create(&t, NULL, worker, NULL);
    char c = dst[2]; // RACE
    pthread_join(t, NULL);
    printf("%d %s\n", c, dst);
    return 0;
}
