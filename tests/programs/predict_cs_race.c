/* PREDICTIVE. Two threads write x, each outside a critical section on the
 * same lock; the critical sections update different counters (no conflict).
 * The second thread sleeps first, so in the observed run its critical section
 * follows the first thread's, and that unlock/lock pair is the only thing
 * ordering the writes of x: no happens-before race (TSan is silent). Swapping
 * the two critical sections is a correct reordering that puts the writes
 * side by side: CP and WCP report the race on x. */
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>

static pthread_mutex_t l = PTHREAD_MUTEX_INITIALIZER;
/* Longs: each counter in an 8-byte cell of its own (CP and WCP rule (a)
 * compares cells, not bytes; README, "Semantic decisions"). */
static int x;
static long a, b;

static void *first(void *arg) {
    x = 1; // RACE
    pthread_mutex_lock(&l);
    a++;
    pthread_mutex_unlock(&l);
    return arg;
}

static void *second(void *arg) {
    usleep(150000); /* fixes the observed order only */
    pthread_mutex_lock(&l);
    b++;
    pthread_mutex_unlock(&l);
    x = 2; // RACE
    return arg;
}

int main(void) {
    pthread_t t1, t2;
    pthread_create(&t1, NULL, first, NULL);
    pthread_create(&t2, NULL, second, NULL);
    pthread_join(t1, NULL);
    pthread_join(t2, NULL);
    printf("%d %ld %ld\n", x, a, b);
    return 0;
}
