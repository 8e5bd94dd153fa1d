/* Twin of mutex_destroy_race.c: main joins the thread before destroying the
 * mutex. */
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>

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
    usleep(100000);
    pthread_join(t, NULL);
    pthread_mutex_destroy(&m);
    printf("%d\n", shared);
    return 0;
}
