/* A thread destroys a mutex that main holds (glibc refuses with EBUSY). Every
 * access to the mutex is ordered (main locks before creating the thread and
 * unlocks after joining it), so this is not a data race; TSan reports it as
 * "destroy of a locked mutex", a misuse report of its own. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>

static pthread_mutex_t m;

static void *destroyer(void *arg) {
    int rc = pthread_mutex_destroy(&m);
    return (void *)(long)rc;
}

int main(void) {
    pthread_mutex_init(&m, NULL);
    pthread_mutex_lock(&m);
    pthread_t t;
    pthread_create(&t, NULL, destroyer, NULL);
    void *rc;
    pthread_join(t, &rc);
    pthread_mutex_unlock(&m);
    printf("destroy returned %s\n", (long)rc == EBUSY ? "EBUSY" : "other");
    return 0;
}
