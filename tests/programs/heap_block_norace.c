/* A heap block allocated in main is written by a thread; main reads it only
 * after pthread_join, which orders the write before the read: no race. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

static void *writer(void *arg) {
    int *p = arg;
    p[1] = 42;
    return NULL;
}

int main(void) {
    int *p = calloc(4, sizeof *p);
    pthread_t t;
    pthread_create(&t, NULL, writer, p);
    pthread_join(t, NULL);
    int seen = p[1];
    printf("%d %d\n", seen, p[1]);
    free(p);
    return 0;
}
