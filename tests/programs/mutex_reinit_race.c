/* main re-initializes a mutex while a thread locks and unlocks it.
 * pthread_mutex_init writes the mutex object; lock and unlock read it; nothing
 * orders the re-init with the thread's lock/unlock: a race on the mutex. */
#include <pthread.h>
#include <stdio.h>

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static int shared;

static void *locker(void *arg) {
    pthread_mutex_lock(&m); // RACE
    shared++;
    pthread_mutex_unlock(&m); // RACE
    return arg;
}

int main(void) {
    pthread_t t;
    pthread_create(&t, NULL, locker, NULL);
    pthread_mutex_init(&m, NULL); // RACE
    pthread_join(t, NULL);
    printf("%d\n", shared);
    return 0;
}
