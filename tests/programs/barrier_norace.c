/* Two phases separated by a pthread barrier: in phase 1 each of three
 * threads writes its own slot, in phase 2 each reads its neighbour's slot.
 * The barrier orders every phase-1 write before every phase-2 read: no race. */
#include <pthread.h>
#include <stdio.h>

#define N 3
static pthread_barrier_t b;
static long slot[N], seen[N];

static void *work(void *arg) {
    long i = (long)arg;
    slot[i] = i * 10;
    pthread_barrier_wait(&b);
    seen[i] = slot[(i + 1) % N];
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
