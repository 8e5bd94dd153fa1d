/* Two threads run memset, memcpy, memmove, memcmp, strcpy, strncpy, strcat,
 * strlen and strcmp on the two halves of the same buffers. The halves meet at
 * byte 29, inside an 8-byte word, and no byte is touched by both threads: no
 * race. A detector that widens libc ranges to whole words would report one. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#define HALF 29
static volatile size_t half = HALF;
static char buf[2 * HALF];
static char other[2 * HALF];
static size_t lens[2];
static int cmps[2];

static void *work(void *arg) {
    long k = (long)arg;
    char *mine = buf + k * half, *theirs = other + k * half;
    memset(mine, 'a' + (int)k, half);
    memcpy(theirs, mine, half);
    memmove(mine + 1, mine, half - 1);
    cmps[k] = memcmp(mine, theirs, half);
    strcpy(mine, "ab");
    strncpy(theirs, "xyz", half - 1);
    strcat(mine, "cd");
    lens[k] = strlen(mine) + strlen(theirs);
    cmps[k] += strcmp(mine, theirs);
    return NULL;
}

int main(void) {
    pthread_t t[2];
    for (long k = 0; k < 2; k++) pthread_create(&t[k], NULL, work, (void *)k);
    for (int k = 0; k < 2; k++) pthread_join(t[k], NULL);
    printf("%zu %zu %d %d\n", lens[0], lens[1], cmps[0], cmps[1]);
    return 0;
}
