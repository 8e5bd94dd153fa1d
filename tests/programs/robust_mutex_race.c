/* Twin of robust_mutex_norace.c: the owner writes the state after posting
 * the semaphore. Its death while holding the robust mutex is not an unlock,
 * so nothing releases that write to the next locker, which gets EOWNERDEAD
 * and repairs the state: the two writes race. */
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdio.h>

static pthread_mutex_t m;
static sem_t locked;
static long state;

static void *owner(void *arg) {
    pthread_mutex_lock(&m);
    sem_post(&locked);
    state = 1; // RACE
    return arg; /* exits holding m */
}

static void *next_locker(void *arg) {
    sem_wait(&locked);
    int rc = pthread_mutex_lock(&m); /* blocks until the owner has died */
    if (rc == EOWNERDEAD) {
        state = 2; // RACE
        pthread_mutex_consistent(&m);
    }
    pthread_mutex_unlock(&m);
    return (void *)(long)rc;
}

int main(void) {
    pthread_mutexattr_t a;
    pthread_mutexattr_init(&a);
    pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST);
    pthread_mutex_init(&m, &a);
    pthread_mutexattr_destroy(&a);
    sem_init(&locked, 0, 0);
    pthread_t o, n;
    pthread_create(&o, NULL, owner, NULL);
    pthread_create(&n, NULL, next_locker, NULL);
    void *rc;
    pthread_join(n, &rc);
    pthread_join(o, NULL);
    printf("%s %ld\n", (long)rc == EOWNERDEAD ? "EOWNERDEAD" : "unexpected", state);
    pthread_mutex_destroy(&m);
    return (long)rc == EOWNERDEAD ? 0 : 1;
}
