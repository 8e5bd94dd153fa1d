/* main destroys a rwlock that a thread read-locks, without joining first.
 * destroy writes the lock object, rdlock/unlock read it: unordered, a race.
 * (glibc's rwlock destroy changes nothing, so either order runs fine.) */
#include <pthread.h>
#include <stdio.h>

static pthread_rwlock_t rw = PTHREAD_RWLOCK_INITIALIZER;
static int value = 5, seen;

static void *reader(void *arg) {
    pthread_rwlock_rdlock(&rw); // RACE
    seen = value;
    pthread_rwlock_unlock(&rw); // RACE
    return arg;
}

int main(void) {
    pthread_t t;
    pthread_create(&t, NULL, reader, NULL);
    pthread_rwlock_destroy(&rw); // RACE
    pthread_join(t, NULL);
    printf("%d\n", seen);
    return 0;
}
