/* A thread shifts a buffer by one byte with memmove (reading and writing it)
 * while main writes one byte of it: unordered, a race. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

/* The size is read from a volatile so that the compiler cannot expand the
 * call inline into plain loads and stores: the access happens inside libc. */
static volatile size_t len = 32;
static char buf[64] = "abcdefghijklmnopqrstuvwxyz0123456789";

static void *worker(void *arg) {
    memmove(buf + 1, buf, len); // RACE
    return arg;
}

int main(void) {
    pthread_t t;
    pthread_create(&t, NULL, worker, NULL);
    buf[20] = '#'; // RACE
    pthread_join(t, NULL);
    printf("%.36s\n", buf);
    return 0;
}
