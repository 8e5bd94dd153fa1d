/* ENDING: abort. main and a thread race on x, then the program calls abort()
 * (SIGABRT). The recording must keep the race. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

int x; /* external linkage: the compiler must keep the stores */

static void *writer(void *arg) {
    x = 1; // RACE
    return arg;
}

int main(void) {
    pthread_t t;
    pthread_create(&t, NULL, writer, NULL);
    x = 2; // RACE
    pthread_join(t, NULL); /* the race is complete (both writes done) before the ending */
    fflush(stdout);
    abort();
}
