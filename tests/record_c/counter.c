/* A plain unsynchronized counter: every run races. */
#include <pthread.h>
#include <stdio.h>

long counter;

void *work(void *arg) {
    counter++; /* RACE */
    return arg;
}

int main(void) {
    pthread_t t[2];
    for (int i = 0; i < 2; i++) pthread_create(&t[i], 0, work, 0);
    for (int i = 0; i < 2; i++) pthread_join(t[i], 0);
    printf("%ld\n", counter);
    return 0;
}
