/* A thread appends to a string with strcat (which first reads the destination
 * up to its NUL) while main rewrites one of the destination's characters
 * with the same non-NUL value: unordered, a race. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

/* The size is read from a volatile so that the compiler cannot expand the
 * call inline into plain loads and stores: the access happens inside libc. */
static volatile size_t len = 32;
static char dst[64] = "prefix-";
static char src[64] = "suffix";

static void *worker(void *arg) {
    (void)len;
    strcat(dst, src); // RACE
    return arg;
}

int main(void) {
    pthread_t t;
    pthread_create(&t, NULL, worker, NULL);
    dst[1] = 'r'; // RACE
    pthread_join(t, NULL);
    printf("%s\n", dst);
    return 0;
}
