/* Twin of mutex_reinit_race.c: main joins the thread before re-initializing
 * the mutex. */
#include <pthread.h>
#include <stdio.h>

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static int shared;

static void *locker(void *arg) {
    pthread_mutex_lock(&m);
    shared++;
    pthread_mutex_unlock(&m);
    return arg;
}

int main(void) {
    pthread_t t;
    pthread_create(&t, NULL, locker, NULL);
    pthread_join(t, NULL);
    pthread_mutex_init(&m, NULL);
    printf("%d\n", shared);
    return 0;
}
