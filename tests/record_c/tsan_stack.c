/* Two races on thread-private memory shared by pointer: main's stack
 * variable written by a thread, and the thread's TLS variable read by main
 * after the thread published its address. The thread names itself. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>

__thread int per_thread;
int *volatile published;

static void *worker(void *arg) {
    pthread_setname_np(pthread_self(), "worker");
    *(int *)arg = 1; /* RACE-STACK */
    per_thread = 2;  /* RACE-TLS */
    __atomic_store_n(&published, &per_thread, __ATOMIC_RELAXED);
    while (__atomic_load_n(&published, __ATOMIC_RELAXED)) {
    }
    return 0;
}

int main(void) {
    int local = 0;
    pthread_t t;
    pthread_create(&t, 0, worker, &local);
    int seen = local; /* RACE-STACK */
    int *p;
    while (!(p = __atomic_load_n(&published, __ATOMIC_RELAXED))) {
    }
    int tls = *p; /* RACE-TLS */
    __atomic_store_n(&published, 0, __ATOMIC_RELAXED);
    pthread_join(t, 0);
    printf("%d %d\n", seen, tls);
    return 0;
}
