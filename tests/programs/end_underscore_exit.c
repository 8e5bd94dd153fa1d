/* ENDING: _exit. main and a thread race on x, then the program leaves through
 * _exit(3): no atexit handlers, no stdio flush. The recording must keep the
 * race. Exits with status 3 (under TSan: 66, its status for a run that
 * reported something). */
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
    _exit(3);
}
