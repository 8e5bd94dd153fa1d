/* ENDING: exit() from a worker thread while other threads run. main and
 * thread t1 race on x; then a second thread joins t1 and calls exit(0) while
 * main is blocked in pause(). The race is complete before exit: the recording
 * must keep it. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int x; /* external linkage: the compiler must keep the stores */
static pthread_t t1;

static void *writer(void *arg) {
    x = 1; // RACE
    return arg;
}

static void *quitter(void *arg) {
    pthread_join(t1, NULL);
    fflush(stdout);
    exit(0);
    return arg;
}

int main(void) {
    pthread_create(&t1, NULL, writer, NULL);
    x = 2; // RACE
    pthread_t t2;
    pthread_create(&t2, NULL, quitter, NULL);
    for (;;) pause();
}
