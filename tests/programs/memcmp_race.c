/* A thread compares two equal buffers with memcmp (reading all of them)
 * while main writes one byte of one of them: unordered, a race. The byte
 * written keeps its value, so memcmp reads every byte in every schedule. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

/* The size is read from a volatile so that the compiler cannot expand the
 * call inline into plain loads and stores: the access happens inside libc. */
static volatile size_t len = 32;
static char a[64] = "abcdefghijklmnopqrstuvwxyz0123456789";
static char b[64] = "abcdefghijklmnopqrstuvwxyz0123456789";
static int result;

static void *worker(void *arg) {
    result = memcmp(a, b, len); // RACE
    return arg;
}

int main(void) {
    pthread_t t;
    pthread_create(&t, NULL, worker, NULL);
    b[7] = 'h'; // RACE
    pthread_join(t, NULL);
    printf("%d\n", result);
    return 0;
}
