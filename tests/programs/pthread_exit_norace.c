/* A thread writes shared data and leaves through pthread_exit with a value
 * (from a nested call, so the return path is not taken); main joins it and
 * reads both: the join orders them, no race. */
#include <pthread.h>
#include <stdio.h>

static long data;

static void finish(long v) {
    data = v * 2;
    pthread_exit((void *)v);
}

static void *worker(void *arg) {
    finish(21);
    return arg; /* not reached */
}

int main(void) {
    pthread_t t;
    pthread_create(&t, NULL, worker, NULL);
    void *rv;
    pthread_join(t, &rv);
    printf("%ld %ld\n", (long)rv, data);
    return 0;
}
