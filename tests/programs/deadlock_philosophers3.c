/* Dining philosophers, three of them, each taking the left fork and then the
 * right one: the lock order forms a cycle 0 -> 1 -> 2 -> 0, a potential
 * deadlock. Staggered starts make the actual deadlock rare. TSan reports a
 * lock-order-inversion; there is no data race. */
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>

#define N 3
static pthread_mutex_t fork_[N] = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_MUTEX_INITIALIZER,
                                   PTHREAD_MUTEX_INITIALIZER};
static int meals[N];

static void *philosopher(void *arg) {
    long i = (long)arg;
    int first = (int)i, second = (int)((i + 1) % N);
    usleep(100000 * i); /* staggered starts make the actual deadlock rare */
    pthread_mutex_lock(&fork_[first]); // DEADLOCK
    pthread_mutex_lock(&fork_[second]); // DEADLOCK
    meals[i]++;
    pthread_mutex_unlock(&fork_[second]);
    pthread_mutex_unlock(&fork_[first]);
    return NULL;
}

int main(void) {
    pthread_t t[N];
    for (long i = 0; i < N; i++) pthread_create(&t[i], NULL, philosopher, (void *)i);
    for (int i = 0; i < N; i++) pthread_join(t[i], NULL);
    printf("%d %d %d\n", meals[0], meals[1], meals[2]);
    return 0;
}
