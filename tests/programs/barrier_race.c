/* Twin of barrier_norace.c: each thread writes its slot after the barrier
 * instead of before, so the neighbour's read is unordered with it: races. */
#include <pthread.h>
#include <stdio.h>

#define N 3
static pthread_barrier_t b;
static long slot[N], seen[N];

static void *work(void *arg) {
    long i = (long)arg;
    pthread_barrier_wait(&b);
    slot[i] = i * 10; // RACE
    seen[i] = slot[(i + 1) % N]; // RACE
    return NULL;
}

int main(void) {
    pthread_barrier_init(&b, NULL, N);
    pthread_t t[N];
    for (long i = 0; i < N; i++) pthread_create(&t[i], NULL, work, (void *)i);
    for (int i = 0; i < N; i++) pthread_join(t[i], NULL);
    pthread_barrier_destroy(&b);
    printf("%ld %ld %ld\n", seen[0], seen[1], seen[2]);
    return 0;
}
