/* PREDICTIVE. Three threads; the write and the read of x are ordered in the
 * observed run only through a chain of empty critical sections on two locks
 * (T1 unlocks l1, T2 locks l1 and unlocks l2, T3 locks l2), set up by the
 * sleeps. No critical section contains an access, so none of them orders
 * anything but happens-before: CP and WCP report the race on x, TSan and
 * happens-before do not. */
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>

static pthread_mutex_t l1 = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t l2 = PTHREAD_MUTEX_INITIALIZER;
static int x;

static void *t1(void *arg) {
    x = 1; // RACE
    pthread_mutex_lock(&l1);
    pthread_mutex_unlock(&l1);
    return arg;
}

static void *t2(void *arg) {
    usleep(100000); /* fixes the observed order only */
    pthread_mutex_lock(&l1);
    pthread_mutex_unlock(&l1);
    pthread_mutex_lock(&l2);
    pthread_mutex_unlock(&l2);
    return arg;
}

static void *t3(void *arg) {
    usleep(200000); /* fixes the observed order only */
    pthread_mutex_lock(&l2);
    pthread_mutex_unlock(&l2);
    return (void *)(long)x; // RACE
}

int main(void) {
    pthread_t a, b, c;
    void *v;
    pthread_create(&a, NULL, t1, NULL);
    pthread_create(&b, NULL, t2, NULL);
    pthread_create(&c, NULL, t3, NULL);
    pthread_join(a, NULL);
    pthread_join(b, NULL);
    pthread_join(c, &v);
    printf("%ld\n", (long)v);
    return 0;
}
