/* ENDING: a fatal signal. main and a thread race on x, then the program
 * writes through a null pointer (a volatile pointer to volatile, so the
 * compiler can neither see that it is null nor drop the store) and dies of
 * SIGSEGV. The recording must keep the race. */
#include <pthread.h>
#include <stdio.h>


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
    volatile int *volatile nowhere = NULL;
    *nowhere = 1;
    return 0;
}
