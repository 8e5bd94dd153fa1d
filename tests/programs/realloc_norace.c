/* Twin of realloc_race.c: main joins the reader before realloc frees the old
 * block. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

static int seen;

static void *reader(void *arg) {
    int *p = arg;
    seen = p[3];
    return NULL;
}

int main(void) {
    int *p = malloc(16);
    void *fence = malloc(16); /* blocks in-place growth */
    for (int i = 0; i < 4; i++) p[i] = i;
    pthread_t t;
    pthread_create(&t, NULL, reader, p);
    pthread_join(t, NULL);
    int *q = realloc(p, 4096);
    printf("%d %d\n", seen, q[3]);
    free(q);
    free(fence);
    return 0;
}
