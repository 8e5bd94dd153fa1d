/* A heap block allocated in main is written by a thread while main reads it.
 * Races: main reads p[1] before joining, so nothing orders the read and the
 * thread's write, whichever runs first. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

static void *writer(void *arg) {
    int *p = arg;
    p[1] = 42; // RACE
    return NULL;
}

int main(void) {
    int *p = calloc(4, sizeof *p);
    pthread_t t;
    pthread_create(&t, NULL, writer, p);
    int seen = p[1]; // RACE
    pthread_join(t, NULL);
    printf("%d %d\n", seen, p[1]);
    free(p);
    return 0;
}
