/* The same variable accessed atomically by one thread and plainly by the
 * other. Two atomic accesses never race, but an atomic and a plain one do:
 * the plain read is unordered with the atomic increment. */
#include <pthread.h>
#include <stdio.h>

static int hits;

static void *bump(void *arg) {
    __atomic_fetch_add(&hits, 1, __ATOMIC_SEQ_CST); // RACE
    return arg;
}

int main(void) {
    pthread_t t;
    pthread_create(&t, NULL, bump, NULL);
    int v = *(volatile int *)&hits; // RACE
    pthread_join(t, NULL);
    printf("%d\n", v);
    return 0;
}
