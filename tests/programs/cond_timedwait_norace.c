/* pthread_cond_timedwait in a loop (re-checking the predicate after each
 * timeout) waits for a flag the other thread sets under the mutex after
 * writing the payload: the mutex orders the write before the read. */
#include <pthread.h>
#include <stdio.h>
#include <time.h>

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t c = PTHREAD_COND_INITIALIZER;
static int ready;
static long payload;

static void *producer(void *arg) {
    payload = 99;
    pthread_mutex_lock(&m);
    ready = 1;
    pthread_cond_signal(&c);
    pthread_mutex_unlock(&m);
    return arg;
}

int main(void) {
    pthread_t t;
    pthread_create(&t, NULL, producer, NULL);
    pthread_mutex_lock(&m);
    while (!ready) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += 5000000;
        if (ts.tv_nsec >= 1000000000) { ts.tv_sec++; ts.tv_nsec -= 1000000000; }
        pthread_cond_timedwait(&c, &m, &ts);
    }
    pthread_mutex_unlock(&m);
    long v = payload;
    pthread_join(t, NULL);
    printf("%ld\n", v);
    return 0;
}
