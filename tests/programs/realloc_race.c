/* A thread reads a block while main grows it with realloc. A neighbouring
 * allocation keeps the block from growing in place, so realloc moves it and
 * frees the old block: that free is a write of the old block, unordered with
 * the thread's read: a race. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

static int seen;

static void *reader(void *arg) {
    int *p = arg;
    seen = p[3]; // RACE
    return NULL;
}

int main(void) {
    int *p = malloc(16);
    void *fence = malloc(16); /* blocks in-place growth */
    for (int i = 0; i < 4; i++) p[i] = i;
    pthread_t t;
    pthread_create(&t, NULL, reader, p);
    int *q = realloc(p, 4096); // RACE
    pthread_join(t, NULL);
    printf("%d %d\n", seen, q[3]);
    free(q);
    free(fence);
    return 0;
}
