/* Control for predict_cs_race.c (race-free under every relation): the two
 * critical sections now conflict (the first writes shared, the second reads
 * it), so the second cannot be moved before the first without changing what
 * it reads: the lock edge is a real ordering, and CP and WCP order the
 * accesses to x as happens-before does. */
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>

static pthread_mutex_t l = PTHREAD_MUTEX_INITIALIZER;
static int x, shared, seen;

static void *first(void *arg) {
    x = 1;
    pthread_mutex_lock(&l);
    shared = 1;
    pthread_mutex_unlock(&l);
    return arg;
}

static void *second(void *arg) {
    usleep(150000); /* fixes the observed order only */
    pthread_mutex_lock(&l);
    seen = shared;
    pthread_mutex_unlock(&l);
    x = 2;
    return arg;
}

int main(void) {
    pthread_t t1, t2;
    pthread_create(&t1, NULL, first, NULL);
    pthread_create(&t2, NULL, second, NULL);
    pthread_join(t1, NULL);
    pthread_join(t2, NULL);
    printf("%d %d\n", x, seen);
    return 0;
}
