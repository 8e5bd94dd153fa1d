/* A counter updated with __sync_fetch_and_add by one thread and with a plain
 * increment by the other: the plain read-modify-write races with the atomic
 * one. */
#include <pthread.h>
#include <stdio.h>

static long counter;

static void *atomic_add(void *arg) {
    __sync_fetch_and_add(&counter, 1); // RACE
    return arg;
}

static void *plain_add(void *arg) {
    counter++; // RACE
    return arg;
}

int main(void) {
    pthread_t a, b;
    pthread_create(&a, NULL, atomic_add, NULL);
    pthread_create(&b, NULL, plain_add, NULL);
    pthread_join(a, NULL);
    pthread_join(b, NULL);
    printf("%ld\n", counter);
    return 0;
}
