/* Memory reuse across threads: one thread allocates a block, writes it, frees
 * it and exits; later another thread allocates a block of the same size,
 * which glibc usually hands back at the same address (the second thread takes
 * over the first one's arena), and writes it. The two blocks are different objects: a fresh
 * allocation is never in conflict with what the old one saw, so there is no
 * race. A detector must treat malloc as new memory, not as a continuation
 * of the freed block. (The sleep only makes the reuse likely; the program is
 * race-free in every schedule.) */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define SIZE 200
static void *addr[2];

static void *use_block(void *arg) {
    long i = (long)arg;
    usleep(100000 * i);
    char *p = malloc(SIZE);
    addr[i] = p;
    p[0] = (char)i;
    p[SIZE / 2] = (char)i;
    memset(p + 8, (int)i, 64);
    free(p);
    return NULL;
}

int main(void) {
    pthread_t t[2];
    for (long i = 0; i < 2; i++) pthread_create(&t[i], NULL, use_block, (void *)i);
    for (int i = 0; i < 2; i++) pthread_join(t[i], NULL);
    printf("%s\n", addr[0] == addr[1] ? "reused" : "not reused");
    return 0;
}
