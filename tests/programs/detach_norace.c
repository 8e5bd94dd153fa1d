/* A detached thread writes a result, then posts a semaphore; main waits on
 * the semaphore and reads the result. sem_post/sem_wait order the write
 * before the read: no race. */
#include <pthread.h>
#include <semaphore.h>
#include <stdio.h>

static int result;
static sem_t ready;

static void *worker(void *arg) {
    result = 42;
    sem_post(&ready);
    return arg;
}

int main(void) {
    sem_init(&ready, 0, 0);
    pthread_t t;
    pthread_create(&t, NULL, worker, NULL);
    pthread_detach(t);
    sem_wait(&ready);
    printf("%d\n", result);
    return 0;
}
