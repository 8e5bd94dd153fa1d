/* A thread blocked in pthread_cond_wait is cancelled; its cleanup handler
 * (run with the mutex re-acquired) unlocks the mutex and then writes a
 * record. A third thread, started before the cancel, reads the record with
 * no synchronization at all: a race. */
#include <pthread.h>
#include <stdio.h>

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t c = PTHREAD_COND_INITIALIZER;
static int cancelled;
static int started;

static void cleanup(void *arg) {
    pthread_mutex_unlock(arg);
    cancelled = 1; // RACE
}

static void *waiter(void *arg) {
    pthread_mutex_lock(&m);
    started = 1;
    pthread_cond_signal(&c);
    pthread_cleanup_push(cleanup, &m);
    for (;;) pthread_cond_wait(&c, &m); /* never signalled: waits until cancelled */
    pthread_cleanup_pop(1);
    return arg;
}

static void *observer(void *arg) {
    return (void *)(long)cancelled; // RACE
}

int main(void) {
    pthread_t t, o;
    pthread_create(&t, NULL, waiter, NULL);
    pthread_mutex_lock(&m);
    while (!started) pthread_cond_wait(&c, &m);
    pthread_mutex_unlock(&m);
    pthread_create(&o, NULL, observer, NULL);
    pthread_cancel(t);
    pthread_join(t, NULL);
    void *seen;
    pthread_join(o, &seen);
    printf("%d %ld\n", cancelled, (long)seen);
    return 0;
}
