/* A lock-order inversion (A then B, B then A) that can never deadlock: both
 * threads take the gate lock G first, so only one of them can be inside
 * either nesting at a time. A deadlock predictor that knows gate locks stays
 * silent. TSan's detector does not: it reports a lock-order-inversion (a
 * false alarm). No data race. */
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>

static pthread_mutex_t G = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t A = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t B = PTHREAD_MUTEX_INITIALIZER;
static int total;

static void *ab(void *arg) {
    pthread_mutex_lock(&G);
    pthread_mutex_lock(&A);
    pthread_mutex_lock(&B);
    total += 1;
    pthread_mutex_unlock(&B);
    pthread_mutex_unlock(&A);
    pthread_mutex_unlock(&G);
    return arg;
}

static void *ba(void *arg) {
    usleep(50000);
    pthread_mutex_lock(&G);
    pthread_mutex_lock(&B);
    pthread_mutex_lock(&A);
    total += 2;
    pthread_mutex_unlock(&A);
    pthread_mutex_unlock(&B);
    pthread_mutex_unlock(&G);
    return arg;
}

int main(void) {
    pthread_t t1, t2;
    pthread_create(&t1, NULL, ab, NULL);
    pthread_create(&t2, NULL, ba, NULL);
    pthread_join(t1, NULL);
    pthread_join(t2, NULL);
    printf("%d\n", total);
    return 0;
}
