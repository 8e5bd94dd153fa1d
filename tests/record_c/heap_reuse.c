/* Heap blocks freed and reallocated across threads after a join: each round a
 * thread fills a block and frees it, the next round's thread allocates blocks
 * of the same size (often the same addresses) and uses them. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define ROUNDS 4
long sum;

void *fill(void *arg) {
    long *a = malloc(8 * sizeof(long));
    long *b = malloc(8 * sizeof(long));
    for (int i = 0; i < 8; i++) a[i] = b[i] = i + (long)arg;
    long s = 0;
    for (int i = 0; i < 8; i++) s += a[i] + b[i];
    free(a);
    b = realloc(b, 64 * sizeof(long));
    b[40] = s;
    s = b[40];
    free(b);
    return (void *)s;
}

int main(void) {
    for (long r = 0; r < ROUNDS; r++) {
        pthread_t t[2];
        void *res;
        for (long i = 0; i < 2; i++) pthread_create(&t[i], 0, fill, (void *)(r + i));
        for (int i = 0; i < 2; i++) {
            pthread_join(t[i], &res);
            sum += (long)res;
        }
        long *m = malloc(8 * sizeof(long));
        m[0] = sum;
        sum = m[0];
        free(m);
    }
    printf("%ld\n", sum);
    return 0;
}
