/* Barrier phases: in each phase every thread writes its own cell, then after
 * the barrier reads its neighbour's; a second barrier ends the phase. */
#include <pthread.h>
#include <stdio.h>

#define T 3
#define PHASES 5
int cell[T];
long total[T];
pthread_barrier_t b;

void *work(void *arg) {
    int me = (int)(long)arg;
    for (int p = 0; p < PHASES; p++) {
        cell[me] = p * 10 + me;
        pthread_barrier_wait(&b);
        total[me] += cell[(me + 1) % T];
        pthread_barrier_wait(&b);
    }
    return 0;
}

int main(void) {
    pthread_t t[T];
    pthread_barrier_init(&b, 0, T);
    for (long i = 0; i < T; i++) pthread_create(&t[i], 0, work, (void *)i);
    for (int i = 0; i < T; i++) pthread_join(t[i], 0);
    printf("%ld %ld %ld\n", total[0], total[1], total[2]);
    return 0;
}
