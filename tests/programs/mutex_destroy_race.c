/* main destroys a mutex that a thread locks and unlocks, without joining the
 * thread first. pthread_mutex_destroy writes the mutex object; lock/unlock
 * read it; nothing orders them: a race in every schedule. The sleep orders
 * nothing: it only makes the thread's lock/unlock usually come first, so that
 * TSan's report is the data race alone (when the destroy comes first, glibc
 * also fails the lock with EINVAL and TSan adds "use of an invalid mutex"). */
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>

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
    usleep(100000);
    pthread_mutex_destroy(&m); // RACE
    pthread_join(t, NULL);
    printf("%d\n", shared);
    return 0;
}
