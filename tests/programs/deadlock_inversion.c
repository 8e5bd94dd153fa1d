/* Lock-order inversion: one thread takes A then B, the other B then A. The
 * second thread sleeps first, so in practice the first has released both
 * before it starts and the program finishes; with unlucky timing it would
 * deadlock. TSan reports a lock-order-inversion (potential deadlock). There
 * is no data race. */
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>

static pthread_mutex_t A = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t B = PTHREAD_MUTEX_INITIALIZER;
static int total;

static void *ab(void *arg) {
    pthread_mutex_lock(&A); // DEADLOCK
    pthread_mutex_lock(&B); // DEADLOCK
    total += 1;
    pthread_mutex_unlock(&B);
    pthread_mutex_unlock(&A);
    return arg;
}

static void *ba(void *arg) {
    usleep(150000); /* makes the actual deadlock rare */
    pthread_mutex_lock(&B); // DEADLOCK
    pthread_mutex_lock(&A); // DEADLOCK
    total += 2;
    pthread_mutex_unlock(&A);
    pthread_mutex_unlock(&B);
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
