/* The thread writes under two mutexes, main reads holding none: a race
 * whose writer holds M0 and M1. */
#include <pthread.h>
#include <stdio.h>

long total;
pthread_mutex_t outer = PTHREAD_MUTEX_INITIALIZER;
pthread_mutex_t inner = PTHREAD_MUTEX_INITIALIZER;

static void *writer(void *arg) {
    pthread_mutex_lock(&outer); /* LOCK-OUTER */
    pthread_mutex_lock(&inner); /* LOCK-INNER */
    total += 5; /* RACE */
    pthread_mutex_unlock(&inner);
    pthread_mutex_unlock(&outer);
    return arg;
}

int main(void) {
    pthread_t t;
    pthread_create(&t, 0, writer, 0);
    long seen = total; /* RACE */
    pthread_join(t, 0);
    printf("%ld\n", seen);
    return 0;
}
