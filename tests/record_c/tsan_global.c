/* A global written by a thread and read by main, unsynchronized: TSan and
 * cprace both describe it as "global 'shared' of size 4". */
#include <pthread.h>
#include <stdio.h>

int shared;

static void *writer(void *arg) {
    shared = 42; /* RACE */
    return arg;
}

int main(void) {
    pthread_t t;
    pthread_create(&t, 0, writer, 0);
    int seen = shared; /* RACE */
    pthread_join(t, 0);
    printf("%d\n", seen);
    return 0;
}
