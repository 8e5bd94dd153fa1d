/* ENDING: a hang. main and a thread race on x, then main blocks forever; the
 * program must be stopped from outside (a timeout, SIGINT or SIGTERM). The
 * recording must keep the race. */
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>

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
    for (;;) pause();
}
