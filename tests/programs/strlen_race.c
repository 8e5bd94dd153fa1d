/* A thread measures a string with strlen while main overwrites one of its
 * characters (with a non-NUL byte, so strlen reads past it in every
 * schedule): unordered, a race. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

/* The size is read from a volatile so that the compiler cannot expand the
 * call inline into plain loads and stores: the access happens inside libc. */
static volatile size_t len = 32;
static char s[64] = "hello, concurrent world";
static size_t n;

static void *worker(void *arg) {
    n = strlen(s); // RACE
    return arg;
}

int main(void) {
    pthread_t t;
    pthread_create(&t, NULL, worker, NULL);
    s[3] = 'L'; // RACE
    pthread_join(t, NULL);
    printf("%zu %s\n", n, s);
    return 0;
}
