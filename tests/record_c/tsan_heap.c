/* A heap block allocated in main, written by a thread and read by main,
 * unsynchronized: both reports describe the block and where it came from. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

int *block;

static void *writer(void *arg) {
    block[0] = 1; /* RACE */
    return arg;
}

int main(void) {
    block = malloc(sizeof *block); /* ALLOC */
    block[0] = 0;
    pthread_t t;
    pthread_create(&t, 0, writer, 0); /* CREATE */
    int seen = block[0]; /* RACE */
    pthread_join(t, 0);
    printf("%d\n", seen);
    free(block);
    return 0;
}
