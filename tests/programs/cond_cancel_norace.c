/* A thread blocked in pthread_cond_wait is cancelled. Cancellation
 * re-acquires the mutex before running the thread's cleanup handlers, and
 * the handler records the cancellation and unlocks the mutex. main reads the
 * record under the same mutex after joining: no race (and the mutex is left
 * unlocked, so main's lock does not hang). */
#include <pthread.h>
#include <stdio.h>

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t c = PTHREAD_COND_INITIALIZER;
static int cancelled;
static int started;

static void cleanup(void *arg) {
    cancelled = 1;
    pthread_mutex_unlock(arg);
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

int main(void) {
    pthread_t t;
    pthread_create(&t, NULL, waiter, NULL);
    pthread_mutex_lock(&m);
    while (!started) pthread_cond_wait(&c, &m);
    pthread_mutex_unlock(&m); /* the waiter is (or will soon be) in pthread_cond_wait */
    pthread_cancel(t);
    pthread_join(t, NULL);
    pthread_mutex_lock(&m);
    int v = cancelled;
    pthread_mutex_unlock(&m);
    printf("%d\n", v);
    return 0;
}
