/* A thread compares two equal strings with strcmp (reading both up to the
 * NUL) while main rewrites a character of one with the same value, so strcmp
 * reads it in every schedule: unordered, a race. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

/* The size is read from a volatile so that the compiler cannot expand the
 * call inline into plain loads and stores: the access happens inside libc. */
static volatile size_t len = 32;
static char a[64] = "identical strings";
static char b[64] = "identical strings";
static int result;

static void *worker(void *arg) {
    (void)len;
    result = strcmp(a, b); // RACE
    return arg;
}

int main(void) {
    pthread_t t;
    pthread_create(&t, NULL, worker, NULL);
    a[2] = 'e'; // RACE
    pthread_join(t, NULL);
    printf("%d\n", result);
    return 0;
}
