/* pthread_mutex_trylock (retried until it succeeds) in one thread and
 * pthread_mutex_timedlock in the other, around a shared update: every
 * update holds the mutex, no race. */
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <time.h>

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static long total;

static void *trier(void *arg) {
    for (int i = 0; i < 50; i++) {
        while (pthread_mutex_trylock(&m) != 0) sched_yield();
        total += 1;
        pthread_mutex_unlock(&m);
    }
    return arg;
}

static void *timer(void *arg) {
    for (int i = 0; i < 50; i++) {
        struct timespec ts;
        do {
            clock_gettime(CLOCK_REALTIME, &ts);
            ts.tv_nsec += 1000000;
            if (ts.tv_nsec >= 1000000000) { ts.tv_sec++; ts.tv_nsec -= 1000000000; }
        } while (pthread_mutex_timedlock(&m, &ts) != 0);
        total += 2;
        pthread_mutex_unlock(&m);
    }
    return arg;
}

int main(void) {
    pthread_t a, b;
    pthread_create(&a, NULL, trier, NULL);
    pthread_create(&b, NULL, timer, NULL);
    pthread_join(a, NULL);
    pthread_join(b, NULL);
    printf("%ld\n", total);
    return 0;
}
