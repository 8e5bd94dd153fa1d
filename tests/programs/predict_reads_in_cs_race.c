/* PREDICTIVE. Like predict_cs_race.c, but both critical sections read the
 * same variable (config). Two reads do not conflict, so the critical sections
 * can still be swapped: CP and WCP report the race on x, which happens-before
 * (and TSan) miss in the observed order, fixed by the sleep. */
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>

static pthread_mutex_t l = PTHREAD_MUTEX_INITIALIZER;
static int config = 7;
/* Longs: each result in an 8-byte cell of its own (CP and WCP rule (a)
 * compares cells, not bytes; README, "Semantic decisions"). */
static int x;
static long r1, r2;

static void *first(void *arg) {
    x = 1; // RACE
    pthread_mutex_lock(&l);
    r1 = config;
    pthread_mutex_unlock(&l);
    return arg;
}

static void *second(void *arg) {
    usleep(150000); /* fixes the observed order only */
    pthread_mutex_lock(&l);
    r2 = config;
    pthread_mutex_unlock(&l);
    int v = x; // RACE
    return (void *)(long)v;
}

int main(void) {
    pthread_t t1, t2;
    void *v;
    pthread_create(&t1, NULL, first, NULL);
    pthread_create(&t2, NULL, second, NULL);
    pthread_join(t1, NULL);
    pthread_join(t2, &v);
    printf("%ld %ld %ld\n", (long)v, r1, r2);
    return 0;
}
