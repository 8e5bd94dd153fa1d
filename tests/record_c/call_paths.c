/* More distinct call paths per thread (512 call sites of one function)
   than the runtime's first call-tree table holds: recording must finish,
   and the race after them is reported at its line. */
#include <pthread.h>
#include <stdio.h>

long counter;

__attribute__((noinline)) void leaf(long *p) { *p += 1; }

#define C8(x) x x x x x x x x
#define SITES(p) C8(C8(C8(leaf(p);)))

void *work(void *arg) {
    long mine = 0;
    SITES(&mine)
    counter += mine; /* RACE */
    return arg;
}

int main(void) {
    pthread_t t[2];
    for (int i = 0; i < 2; i++) pthread_create(&t[i], 0, work, 0);
    for (int i = 0; i < 2; i++) pthread_join(t[i], 0);
    printf("%ld\n", counter);
    return 0;
}
