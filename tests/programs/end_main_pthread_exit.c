/* ENDING: main calls pthread_exit. main and a thread race on x, then main
 * leaves through pthread_exit; the process lives on until the other thread
 * returns, and then exits with status 0. The recording must keep the race. */
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>

int x; /* external linkage: the compiler must keep the stores */

static void *writer(void *arg) {
    usleep(50000); /* outlive main's own thread */
    x = 1; // RACE
    return arg;
}

int main(void) {
    pthread_t t;
    pthread_create(&t, NULL, writer, NULL);
    pthread_detach(t);
    x = 2; // RACE
    pthread_exit(NULL);
}
