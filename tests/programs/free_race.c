/* A thread reads a heap block while main frees it without joining first.
 * free writes the whole block (it hands it back to the allocator), so the
 * read and the free are unordered: a race (TSan calls it heap-use-after-free
 * when the free happens to come first). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

static int sum;

static void *reader(void *arg) {
    int *p = arg;
    sum = p[2]; // RACE
    return NULL;
}

int main(void) {
    int *p = malloc(8 * sizeof *p);
    for (int i = 0; i < 8; i++) p[i] = i;
    pthread_t t;
    pthread_create(&t, NULL, reader, p);
    free(p); // RACE
    pthread_join(t, NULL);
    printf("%d\n", sum);
    return 0;
}
