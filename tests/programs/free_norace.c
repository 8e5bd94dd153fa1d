/* Twin of free_race.c: main joins the reader before freeing the block. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

static int sum;

static void *reader(void *arg) {
    int *p = arg;
    sum = p[2];
    return NULL;
}

int main(void) {
    int *p = malloc(8 * sizeof *p);
    for (int i = 0; i < 8; i++) p[i] = i;
    pthread_t t;
    pthread_create(&t, NULL, reader, p);
    pthread_join(t, NULL);
    free(p);
    printf("%d\n", sum);
    return 0;
}
