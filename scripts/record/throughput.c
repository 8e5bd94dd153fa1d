/* Recording throughput: THREADS threads each make ITERS passes over their own
 * 4 KiB array (one read and one write per element), plus a lock round trip
 * per pass. Usage: throughput THREADS ITERS */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

static long iters;
static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static long passes;

static void *work(void *arg) {
    int *a = calloc(1024, sizeof(int));
    for (long k = 0; k < iters; k++) {
        for (int i = 1; i < 1024; i++) a[i] += a[i - 1] ^ (int)k;
        pthread_mutex_lock(&m);
        passes++;
        pthread_mutex_unlock(&m);
    }
    long s = a[1023];
    free(a);
    return (void *)s;
}

int main(int argc, char **argv) {
    int threads = argc > 1 ? atoi(argv[1]) : 2;
    iters = argc > 2 ? atol(argv[2]) : 10000;
    pthread_t t[64];
    for (int i = 0; i < threads && i < 64; i++) pthread_create(&t[i], 0, work, 0);
    for (int i = 0; i < threads && i < 64; i++) pthread_join(t[i], 0);
    printf("%ld passes\n", passes);
    return 0;
}
